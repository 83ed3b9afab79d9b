/**
 * A dockerd restart (an upgrade, `systemctl restart docker`, a reboot) with services running counts no crash,
 * while a tenant's real crash in the same minute is counted once. On an engine of this test's own
 * (scripts/extra-dockerd.sh, in a network namespace of its own): dockerd gets a real SIGTERM and is started
 * again. Ticks run back to back through the shutdown, so that they land in the window in which dockerd has
 * already stopped some containers and still answers (what counted one crash per service before).
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { listCrashRecords } from '../../src/db/crash-records';
import type { StateDb } from '../../src/db/open';
import type { ContainerSpec } from '../../src/docker/engine';
import type { Settings } from '../../src/settings';
import type { TickSummary } from '../../src/contracts/reconcile';
import { dockerdPid, extraEngine, stopEngine, type ExtraEngine } from '../helpers/engines';
import { freshDb, testSettings, TEST_IMAGE, uniqueId, waitFor } from '../helpers/fixtures';
import { devServerEnv } from '../helpers/temporal';
import { TestDockerClient } from '../helpers/test-docker';
import { addService, addTenant, deployments, runTick, service } from '../reconcile/helpers';

const ENGINE = 'rel-restart';

let env: TestWorkflowEnvironment;
let engine: ExtraEngine | undefined;
let docker: TestDockerClient;
let db: StateDb | undefined;

beforeAll(async () => {
  engine = extraEngine(ENGINE);
  docker = new TestDockerClient(engine.dockerHost);
  env = await devServerEnv();
});
afterAll(async () => {
  db?.close();
  await env?.teardown();
  // The engine is this file's own: stopping it removes every container it ran.
  if (engine) stopEngine(engine);
});

/** A service as ah runs it, on this file's engine, with its row. */
async function runService(tenant: string, cmd: string, spec: Partial<ContainerSpec> = {}): Promise<{ sid: string; cid: string }> {
  const sid = uniqueId('svc');
  const cid = await docker.createContainer({
    image: TEST_IMAGE,
    cmd: ['sh', '-c', cmd],
    name: `ah-${tenant}-${sid}`,
    network: 'none',
    restartPolicy: 'unless-stopped',
    labels: { 'ah.tenant': tenant, 'ah.service': sid, 'ah.managed': 'true' },
    ...spec,
  });
  await docker.startContainer(cid);
  addService(db!, tenant, { containerId: cid }, sid);
  return { sid, cid };
}

/** A service whose process exits 3 by itself, with no restart policy: a tenant's real crash. */
async function crashedService(tenant: string): Promise<string> {
  const { sid, cid } = await runService(tenant, 'exit 3', { restartPolicy: 'no' });
  await waitFor('the crashing container to exit', async () => (await docker.inspectContainer(cid)).status === 'exited', 30_000);
  return sid;
}

it('a dockerd restart with services running counts no crash; a real crash in the same minute is counted once', async () => {
  const fresh = freshDb();
  db = fresh.db;
  const settings: Settings = testSettings({ db: fresh.file });
  const deps = { db, docker, settings };
  const tenant = addTenant(db);
  // Two services stop at once on SIGTERM; one ignores it (a shell as PID 1 has no handler), so dockerd waits
  // its 10 s stop timeout and SIGKILLs it, answering all that time with the other two already exited.
  const quick = [
    await runService(tenant, 'trap "exit 143" TERM; while :; do sleep 0.1; done'),
    await runService(tenant, 'trap "exit 0" TERM; while :; do sleep 0.1; done'),
  ];
  const slow = await runService(tenant, 'while :; do sleep 0.1; done');
  const live = [...quick, slow];
  const crashedBefore = await crashedService(tenant);
  const first = await runTick(env, deps);
  expect(first).toMatchObject({ dockerReachable: true, crashes: 1 });

  // ---- dockerd's own shutdown, ticked through ----
  process.kill(dockerdPid(engine!)!, 'SIGTERM');
  const stoppingAtMs = Date.now();
  const during: TickSummary[] = [];
  await waitFor(
    'dockerd to finish its shutdown',
    async () => {
      during.push(await runTick(env, deps));
      return !dockerdPid(engine!);
    },
    90_000,
    0,
  );
  const answered = during.filter((t) => t.dockerReachable);
  const held = answered.reduce((n, t) => n + t.engineStopsHeld, 0);
  console.log(
    `daemon restart: shutdown took ${Date.now() - stoppingAtMs} ms; ${during.length} ticks, ${answered.length} answered; ` +
      `engine stops held ${held}, crashes ${during.reduce((n, t) => n + t.crashes, 0)} (held/counted per tick: ` +
      `${during.map((t) => (t.dockerReachable ? `${t.engineStopsHeld}/${t.crashes}` : '-')).join(' ')})`,
  );
  for (const t of during) expect(t.crashes).toBe(0);
  expect(held).toBeGreaterThanOrEqual(1); // a tick did land in the window, and held what it saw

  // ---- dockerd back: it starts the services again itself ----
  engine = extraEngine(ENGINE);
  for (const { cid } of live)
    await waitFor('the engine to start the service again', async () => (await docker.inspectContainer(cid)).status === 'running', 60_000);
  const crashedAfter = await crashedService(tenant);
  const after = [await runTick(env, deps), await runTick(env, deps)];
  expect(after.map((t) => t.crashes)).toEqual([1, 0]); // the crash after the restart, once

  for (const { sid } of live) {
    expect(service(db, sid)).toMatchObject({ status: 'running', crash_count: 0 });
    expect(deployments(db, sid).filter((d) => d.status === 'crashed')).toEqual([]);
    expect(listCrashRecords(db, sid, 10)).toEqual([]);
  }
  for (const sid of [crashedBefore, crashedAfter]) {
    expect(service(db, sid).crash_count).toBe(1);
    expect(deployments(db, sid).map((d) => d.status)).toEqual(['crashed']);
    expect(listCrashRecords(db, sid, 10).map((r) => r.reason)).toEqual(['exit code 3']);
  }
}, 240_000);
