/**
 * Fault 2: dockerd stopped for 60 s while services run, then started again. On an engine of this test's own
 * (scripts/extra-dockerd.sh, in a network namespace of its own), never the suite's main engine. The loops run from their real schedules on
 * the dev server with a worker in this process; nothing is mocked, and nothing is done by hand after the restart.
 */
import { execFileSync } from 'node:child_process';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StateDb } from '../../src/db/open';
import { lastLoopResults } from '../../src/db/loop-results';
import { ids } from '../../src/ids';
import { LOOP_NAMES } from '../../src/loops/registry';
import { ensureLoopSchedules } from '../../src/loops/schedules';
import { freshDb, tempDir, testSettings, TEST_IMAGE, uniqueId, waitFor } from '../helpers/fixtures';
import { dockerdPid as engineDockerdPid, extraEngine, type ExtraEngine } from '../helpers/engines';
import { devServerEnv, keeperWorker } from '../helpers/temporal';
import { addService, addTenant, deployments, nowSec, service } from '../reconcile/rows';
import { TestDockerClient } from '../helpers/test-docker';

const ENGINE = 'rel-outage';
const OUTAGE_MS = 60_000;

let env: TestWorkflowEnvironment;
let engine: ExtraEngine;
let docker: TestDockerClient;
let worker: Worker | undefined;
let running: Promise<void> | undefined;
let db: StateDb;
const settings = testSettings({
  reconcileInterval: '3s',
  gcInterval: '5s',
  gcFirstDelay: '1s',
  gcMinAge: '0s',
  poolInterval: '5s',
  pooledTemplates: '',
  buildDir: tempDir(),
});
const made = { containers: [] as string[], volumes: [] as string[] };

const dockerdPid = () => engineDockerdPid(engine);

beforeAll(async () => {
  engine = extraEngine(ENGINE);
  docker = new TestDockerClient(engine.dockerHost);
  env = await devServerEnv();
});
afterAll(async () => {
  if (!dockerdPid()) extraEngine(ENGINE);
  for (const loop of LOOP_NAMES)
    await env?.client.schedule
      .getHandle(ids.schedule(settings.hostId, loop))
      .delete()
      .catch(() => undefined);
  worker?.shutdown();
  await running?.catch(() => undefined);
  for (const c of made.containers) await docker.removeContainer(c, { force: true }).catch(() => undefined);
  for (const v of made.volumes) await docker.removeVolume(v).catch(() => undefined);
  db?.close();
  await env?.teardown();
});

interface Seen {
  loop: string;
  workflowId: string;
  finishedAt: number;
  result: Record<string, unknown>;
}
interface ShutdownTick {
  dockerReachable: boolean;
  engineStopsHeld: number;
  crashes: number;
}

describe('fault 2: dockerd stopped for 60 s while services run', () => {
  it('no false crash and GC removes nothing during the outage, DB-only steps go on, and the loops resume by themselves', async () => {
    db = freshDb().db;
    const tenant = addTenant(db);
    const u = uniqueId('');
    // A running service (ah's restart policy), an ah-opened circuit already due whose kept container is stopped,
    // a deploy stuck for an hour, and an orphan ah volume that GC must not touch before the engine answers.
    const live = await docker.createContainer({
      image: TEST_IMAGE,
      cmd: ['sleep', '3600'],
      name: `ah-${tenant}-live${u}`,
      network: 'none',
      restartPolicy: 'unless-stopped',
      labels: { 'ah.tenant': tenant, 'ah.service': `live${u}`, 'ah.managed': 'true' },
    });
    made.containers.push(live);
    await docker.startContainer(live);
    const kept = await docker.createContainer({
      image: TEST_IMAGE,
      cmd: ['sleep', '3600'],
      name: `ah-${tenant}-kept${u}`,
      network: 'none',
      restartPolicy: 'no',
      labels: { 'ah.tenant': tenant, 'ah.service': `kept${u}`, 'ah.managed': 'true' },
    });
    made.containers.push(kept);
    const orphan = `ah-db-${u}-orphan`;
    await docker.createVolume(orphan, {});
    made.volumes.push(orphan);
    const liveId = addService(db, tenant, { containerId: live }, `live${u}`);
    const staleId = addService(db, tenant, { status: 'deploying' }, `stale${u}`); // made stale once the engine is down

    worker = await keeperWorker(env, { db, docker, settings });
    running = worker.run();
    await ensureLoopSchedules(env.client, settings, ['reconcile']);
    await waitFor(
      'a tick that saw the running service',
      () => {
        const r = lastLoopResults(db).find((x) => x.loop === 'reconcile')?.result as
          { dockerReachable: boolean; checked: number } | undefined;
        return r?.dockerReachable && r.checked >= 1;
      },
      30_000,
    );

    // ---- the outage ----
    const pid = dockerdPid()!;
    process.kill(pid, 'SIGTERM');
    const stopping = Date.now();
    const shutdownTicks = new Map<string, ShutdownTick>(); // by workflow id: each tick whose result landed in the shutdown
    await waitFor(
      'dockerd to exit',
      () => {
        const r = lastLoopResults(db).find((x) => x.loop === 'reconcile');
        if (r && r.finishedAt * 1000 >= stopping - 1000) shutdownTicks.set(r.workflowId, r.result as ShutdownTick);
        return !dockerdPid();
      },
      30_000,
    );
    const down = Date.now();
    const answered = [...shutdownTicks.values()].filter((t) => t.dockerReachable);
    console.log(
      `fault 2: shutdown took ${down - stopping} ms; ${shutdownTicks.size} ticks in it, ${answered.length} answered, ` +
        `engine stops held ${answered.map((t) => t.engineStopsHeld).join(' ') || 'none'}`,
    );
    // dockerd's own shutdown stops its containers (SIGTERM, then SIGKILL: exit 137) while it still answers for
    // up to ~10 s; a tick landing in that window holds what it sees (the engine's own stop), never counts it.
    const countedAtDown = service(db, liveId).crash_count;
    expect(countedAtDown).toBe(0);
    // An ah-opened circuit, already due, whose kept container is stopped: it appears while the engine is down (a
    // tick hands an open circuit to its workflow as soon as it sees it), so that its recovery meets the outage.
    const keptId = addService(
      db,
      tenant,
      { status: 'crashed', containerId: kept, circuitOpen: 1, circuitOpenCount: 1, circuitRetryAt: nowSec() - 1 },
      `kept${u}`,
    );
    db.prepare('UPDATE services SET updated_at = ? WHERE id = ?').run(nowSec() - 3600, staleId);
    await ensureLoopSchedules(env.client, settings, ['gc', 'pool']);

    const seen = new Map<string, Seen>();
    const collect = () => {
      for (const r of lastLoopResults(db)) seen.set(r.workflowId + r.finishedAt, r as Seen);
    };
    const during: Seen[] = [];
    await waitFor(
      'the 60 s outage to pass',
      () => {
        collect();
        // Checked all through the outage: no crash counted, the orphan volume's row-less state is not acted on.
        expect(service(db, liveId).crash_count).toBe(countedAtDown);
        return Date.now() - down >= OUTAGE_MS;
      },
      OUTAGE_MS + 10_000,
      500,
    );
    during.push(...seen.values());
    // finishedAt is in whole seconds: a tick that began after the engine died may carry down's second.
    const ticks = during.filter(
      (r) => r.loop === 'reconcile' && r.finishedAt >= Math.floor(down / 1000) && r.result.dockerReachable === false,
    );
    const sweeps = during.filter((r) => r.loop === 'gc');
    const refills = during.filter((r) => r.loop === 'pool');
    console.log(
      `fault 2: during ${OUTAGE_MS / 1000} s down: ${ticks.length} ticks, ${sweeps.length} sweeps, ${refills.length} refills recorded`,
      JSON.stringify({
        tick: ticks.at(-1)?.result,
        sweep: sweeps.at(-1)?.result && (sweeps.at(-1)!.result as { totals: unknown }).totals,
        refill: refills.at(-1)?.result,
      }),
    );
    expect(ticks.length).toBeGreaterThanOrEqual(5);
    for (const t of ticks) expect(t.result).toMatchObject({ dockerReachable: false, crashes: 0, opened: 0 });
    expect(ticks.reduce((n, t) => n + (t.result.failedDeploys as number), 0)).toBe(1); // the DB-only step ran, once
    expect(service(db, staleId).status).toBe('failed');
    expect(ticks.some((t) => (t.result.circuitsExpired as number) >= 1)).toBe(true);
    expect(service(db, keptId).circuit_open).toBe(1); // its recovery needs the engine: it waits, it is not lost
    expect(sweeps.length).toBeGreaterThanOrEqual(1);
    for (const s of sweeps) expect((s.result as { totals: { removed: number } }).totals.removed).toBe(0);
    expect(service(db, liveId).crash_count).toBe(countedAtDown);
    expect(deployments(db, liveId)).toHaveLength(countedAtDown);

    // ---- dockerd back: no operator action from here on ----
    extraEngine(ENGINE);
    const up = Date.now();
    expect((await docker.inspectVolume(orphan)).name).toBe(orphan); // nothing was removed while it was down
    await waitFor(
      'a tick that reaches the engine again',
      () => {
        const r = lastLoopResults(db).find((x) => x.loop === 'reconcile');
        return r && r.finishedAt * 1000 >= up && (r.result as { dockerReachable: boolean }).dockerReachable;
      },
      30_000,
    );
    await waitFor(
      'GC to resume and remove the orphan volume',
      async () => {
        try {
          await docker.inspectVolume(orphan);
          return false;
        } catch (err) {
          return (err as { isNotFound?: boolean }).isNotFound;
        }
      },
      60_000,
    );
    await waitFor(
      'the due circuit to recover once its activity reaches the engine',
      () => service(db, keptId).circuit_open === 0,
      180_000,
      500,
    );
    const recoveredAfter = Math.round((Date.now() - up) / 1000);
    expect(service(db, keptId)).toMatchObject({ status: 'running', circuit_open: 0 });
    expect(deployments(db, keptId).map((d) => d.trigger)).toEqual(['auto_recovery']);
    // The daemon's own restart of the live container (restart policy) is not a tenant crash.
    await waitFor('live container running again', async () => (await docker.inspectContainer(live)).status === 'running', 30_000);
    const liveRow = service(db, liveId);
    console.log(
      `fault 2: after restart: circuit recovered in ${recoveredAfter} s; live service`,
      JSON.stringify({ status: liveRow.status, crash_count: liveRow.crash_count, countedDuringShutdown: countedAtDown }),
    );
    expect(liveRow.crash_count).toBe(countedAtDown); // the daemon's restart of it (restart policy) is not counted
    expect(made.containers.length).toBe(2);
    expect(
      execFileSync('docker', ['-H', engine.dockerHost, 'ps', '-aq', '--filter', `name=${u}`], { encoding: 'utf8' })
        .trim()
        .split('\n'),
    ).toHaveLength(2);
  }, 300_000);
});
