/**
 * In-flight rows (created, restarting, deploying) whose container vanished, on the real engine, a real SQLite
 * file and the real tick workflow (policy/rows.ts inFlightOutcome; W-20 in docs/ah-differences.md). The pure
 * rules for every state × container condition are in test/policy/rows.test.ts; the watched states (running,
 * crashed) × conditions in tick-engine.test.ts and accounting.test.ts. Nothing is mocked but the engine error,
 * which a fault-injecting proxy in front of the real engine answers.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { VANISHED_REASON } from '../../src/policy/rows';
import type { Settings } from '../../src/settings';
import { DockerProxy } from '../helpers/docker-proxy';
import { EngineFixture, freshDb, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { devServerEnv } from '../helpers/temporal';
import { addService, addTenant, runServiceContainer, runTick, service } from './helpers';

let env: TestWorkflowEnvironment;
let db: StateDb;
let settings: Settings;
let tenant: string;
const engine = new EngineFixture();
const docker = new DockerClient();
const deps = () => ({ db, docker, settings });

beforeAll(async () => {
  env = await devServerEnv();
});
afterAll(async () => {
  await env?.teardown();
});
afterEach(async () => {
  await engine.cleanup();
  db?.close();
});

/** A container id the engine made and no longer has: a 404 on inspect. */
async function vanishedContainer(sid: string): Promise<string> {
  const cid = await runServiceContainer(engine, tenant, sid);
  await docker.removeContainer(cid, { force: true });
  return cid;
}

describe('in-flight rows on the real engine', () => {
  it('stops created and restarting rows whose container is gone, leaves deploying to its timeout, and present containers alone', async () => {
    db = freshDb().db;
    settings = testSettings();
    tenant = addTenant(db);
    const gone = { created: uniqueId('svc'), restarting: uniqueId('svc'), deploying: uniqueId('svc') };
    for (const [status, sid] of Object.entries(gone)) addService(db, tenant, { status, containerId: await vanishedContainer(sid) }, sid);
    const present = { created: uniqueId('svc'), restarting: uniqueId('svc') };
    const neverStarted = await runServiceContainer(engine, tenant, present.created, {}, false);
    addService(db, tenant, { status: 'created', containerId: neverStarted }, present.created);
    addService(
      db,
      tenant,
      { status: 'restarting', containerId: await runServiceContainer(engine, tenant, present.restarting) },
      present.restarting,
    );
    const noContainer = addService(db, tenant, { status: 'created', containerId: null });

    const summary = await runTick(env, deps());
    expect(summary).toMatchObject({ crashes: 0, missing: 2 });
    expect(service(db, gone.created)).toMatchObject({ status: 'stopped', last_error: VANISHED_REASON, crash_count: 0 });
    expect(service(db, gone.restarting)).toMatchObject({ status: 'stopped', last_error: VANISHED_REASON, crash_count: 0 });
    expect(service(db, gone.deploying)).toMatchObject({ status: 'deploying', crash_count: 0 });
    expect(service(db, present.created).status).toBe('created');
    expect(service(db, present.restarting).status).toBe('restarting');
    expect(service(db, noContainer).status).toBe('created');

    expect(await runTick(env, deps())).toMatchObject({ crashes: 0, missing: 0 });
  });

  it('leaves every in-flight row alone while its container is present, running or exited', async () => {
    db = freshDb().db;
    settings = testSettings();
    tenant = addTenant(db);
    const rows: { sid: string; status: string; condition: string }[] = [];
    for (const status of ['created', 'deploying', 'restarting']) {
      const running = uniqueId('svc');
      addService(db, tenant, { status, containerId: await runServiceContainer(engine, tenant, running) }, running);
      const exited = uniqueId('svc');
      const cid = await runServiceContainer(engine, tenant, exited, { cmd: ['sh', '-c', 'exit 1'], restartPolicy: 'no' });
      await waitFor('container to exit', async () => (await docker.inspectContainer(cid)).status === 'exited');
      addService(db, tenant, { status, containerId: cid }, exited);
      rows.push({ sid: running, status, condition: 'running' }, { sid: exited, status, condition: 'exited' });
    }
    expect(await runTick(env, deps())).toMatchObject({ crashes: 0, missing: 0 });
    for (const r of rows) expect(service(db, r.sid), `${r.status} × ${r.condition}`).toMatchObject({ status: r.status, crash_count: 0 });
  });

  it('changes nothing when the inspect of a vanished container fails with an engine error other than 404', async () => {
    db = freshDb().db;
    settings = testSettings();
    tenant = addTenant(db);
    const sids = [uniqueId('svc'), uniqueId('svc'), uniqueId('svc'), uniqueId('svc')];
    addService(db, tenant, { status: 'created', containerId: await vanishedContainer(sids[0]) }, sids[0]);
    addService(db, tenant, { status: 'restarting', containerId: await vanishedContainer(sids[1]) }, sids[1]);
    // deploying is left to its timeout and never inspected; a crashed row's vanished container is inspected.
    addService(db, tenant, { status: 'deploying', containerId: await vanishedContainer(sids[2]) }, sids[2]);
    addService(db, tenant, { status: 'crashed', containerId: await vanishedContainer(sids[3]) }, sids[3]);
    // The fault injector answers every container inspect with a 500, as a struggling engine would.
    const proxy = await DockerProxy.start();
    try {
      proxy.fail({ method: 'GET', path: /^\/containers\/[^/]+\/json$/, status: 500 });
      const summary = await runTick(env, { db, docker: new DockerClient(proxy.dockerHost), settings });
      expect(summary).toMatchObject({ crashes: 0, missing: 0, transientErrors: 3 });
      expect(proxy.requests.filter((r) => r.injected).length).toBeGreaterThanOrEqual(2);
    } finally {
      await proxy.close();
    }
    expect(service(db, sids[0]).status).toBe('created');
    expect(service(db, sids[1]).status).toBe('restarting');
    expect(service(db, sids[2]).status).toBe('deploying');
    expect(service(db, sids[3])).toMatchObject({ status: 'crashed', crash_count: 0 });
  });

  it('fails a deploying row whose container is gone once the stale-deploy timeout passes', async () => {
    db = freshDb().db;
    settings = testSettings();
    tenant = addTenant(db);
    const sid = uniqueId('svc');
    const staleSec = settings.staleDeployAfterMs / 1000 + 60;
    addService(
      db,
      tenant,
      { status: 'deploying', containerId: await vanishedContainer(sid), updatedAt: Math.floor(Date.now() / 1000) - staleSec },
      sid,
    );
    await runTick(env, deps());
    expect(service(db, sid)).toMatchObject({ status: 'failed', last_error: 'deploy timed out (reconciler)' });
  });
});
