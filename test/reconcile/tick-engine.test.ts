/**
 * The reconcile tick end to end on the CLI dev server: real containers on this suite's engine, a real SQLite
 * file, the real workflow and activities. Nothing is mocked.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { ids } from '../../src/ids';
import type { Settings } from '../../src/settings';
import { EngineFixture, freshDb, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { devServerEnv } from '../helpers/temporal';
import { addService, addTenant, deployments, nowSec, runServiceContainer, runTick, service } from './helpers';

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
const setup = () => {
  db = freshDb().db;
  settings = testSettings();
  tenant = addTenant(db);
};

async function exitedContainer(serviceId: string, code = 3): Promise<string> {
  const id = await runServiceContainer(engine, tenant, serviceId, { cmd: ['sh', '-c', `exit ${code}`], restartPolicy: 'no' });
  await waitFor('container to exit', async () => (await docker.inspectContainer(id)).status === 'exited');
  return id;
}

describe('reconcileTick on the real engine', () => {
  it('counts an exited container once, as ah writes it, and never again while it stays down', async () => {
    setup();
    const sid = uniqueId('svc');
    const cid = await exitedContainer(sid);
    addService(db, tenant, { containerId: cid }, sid);

    const first = await runTick(env, deps());
    expect(first).toMatchObject({ dockerReachable: true, crashes: 1, crashedServices: 1, opened: 0 });
    expect(service(db, sid)).toMatchObject({
      status: 'crashed',
      crash_count: 1,
      last_error: 'container exited (exit code 3)',
      circuit_open: 0,
    });
    const rows = deployments(db, sid);
    expect(rows).toEqual([
      expect.objectContaining({
        status: 'crashed',
        trigger: 'reconciler',
        error_message: 'container exited (exit code 3)',
        container_id: '',
        build_id: null,
      }),
    ]);
    expect(rows[0].id).toMatch(/^[0-9a-f]{32}$/);

    const second = await runTick(env, deps());
    expect(second.crashes).toBe(0);
    expect(service(db, sid).crash_count).toBe(1);
    expect(deployments(db, sid)).toHaveLength(1);
  });

  it('marks a missing container (404) crashed, then stopped on the next tick', async () => {
    setup();
    const sid = uniqueId('svc');
    const cid = await runServiceContainer(engine, tenant, sid);
    await docker.removeContainer(cid, { force: true });
    addService(db, tenant, { containerId: cid }, sid);

    expect(await runTick(env, deps())).toMatchObject({ crashes: 1 });
    expect(service(db, sid)).toMatchObject({ status: 'crashed', crash_count: 1, last_error: 'container not found by reconciler' });
    expect(await runTick(env, deps())).toMatchObject({ crashes: 0, missing: 1 });
    expect(service(db, sid)).toMatchObject({ status: 'stopped', crash_count: 1 });
  });

  it('restarts an unhealthy container and counts one crash', async () => {
    setup();
    const sid = uniqueId('svc');
    const cid = await runServiceContainer(engine, tenant, sid, {
      cmd: ['sleep', '3600'],
      healthcheck: { cmd: ['sh', '-c', 'exit 1'], intervalMs: 300, retries: 1 },
    });
    await waitFor('container to turn unhealthy', async () => (await docker.inspectContainer(cid)).health === 'unhealthy');
    const startedBefore = (await docker.inspectContainer(cid)).startedAt;
    const before = await docker.inspectContainer(cid);
    addService(db, tenant, { containerId: cid }, sid);

    const summary = await runTick(env, deps());
    expect(summary).toMatchObject({ crashes: 1, unhealthyRestarted: 1 });
    expect(service(db, sid)).toMatchObject({ status: 'crashed', crash_count: 1, last_error: 'container unhealthy (health check failed)' });
    const after = await docker.inspectContainer(cid);
    expect(after.status).toBe('running');
    expect(`${after.startedAt}/${after.finishedAt}`).not.toBe(`${startedBefore}/${before.finishedAt}`);
  });

  it('opens the circuit of a crash loop under unless-stopped within one tick, stopping but keeping the container', async () => {
    setup();
    const sid = uniqueId('svc');
    const cid = await runServiceContainer(engine, tenant, sid, { cmd: ['sh', '-c', 'exit 1'], restartPolicy: 'unless-stopped' });
    await waitFor('Docker to restart it 5 times', async () => (await docker.inspectContainer(cid)).restartCount >= 5, 30_000);
    addService(db, tenant, { containerId: cid }, sid);

    const summary = await runTick(env, deps());
    try {
      expect(summary.opened).toBe(1);
      expect(summary.crashes).toBeGreaterThanOrEqual(5);
      const row = service(db, sid);
      expect(row).toMatchObject({ status: 'crashed', circuit_open: 1, circuit_open_count: 1, container_id: cid });
      expect(row.circuit_retry_at! - nowSec()).toBeGreaterThan(1800 - 30);
      expect(row.circuit_retry_at! - nowSec()).toBeLessThanOrEqual(1800);
      const kept = await docker.inspectContainer(cid);
      expect(kept.status).toBe('exited');
      const circuit = env.client.workflow.getHandle(ids.circuit(settings.hostId, sid));
      expect((await circuit.describe()).status.name).toBe('RUNNING');
      // The container stays stopped: the next tick counts nothing more.
      const again = await runTick(env, deps());
      expect(again).toMatchObject({ crashes: 0, opened: 0 });
    } finally {
      await env.client.workflow
        .getHandle(ids.circuit(settings.hostId, sid))
        .terminate('test cleanup')
        .catch(() => undefined);
    }
  });

  it('counts deaths Docker restarted between two ticks, once each, with a container in `restarting`', async () => {
    setup();
    const sid = uniqueId('svc');
    const cid = await runServiceContainer(engine, tenant, sid, { cmd: ['sh', '-c', 'sleep 1; exit 1'], restartPolicy: 'unless-stopped' });
    addService(db, tenant, { containerId: cid }, sid);
    await runTick(env, deps());
    const base = (await docker.inspectContainer(cid)).restartCount;
    const counted0 = service(db, sid).crash_count;
    await waitFor('two more restarts', async () => (await docker.inspectContainer(cid)).restartCount >= base + 2, 30_000);
    await runTick(env, deps());
    const rc = (await docker.inspectContainer(cid)).restartCount;
    const row = service(db, sid);
    // Each restart Docker made after the first look is counted exactly once (the window is 600 s).
    expect(row.crash_count - counted0).toBeGreaterThanOrEqual(2);
    expect(row.crash_count - counted0).toBeLessThanOrEqual(rc - base + 1);
    expect(row.status).toBe('crashed');
  });

  it('takes a crashed service whose container has run 10 s again back to running', async () => {
    setup();
    const sid = uniqueId('svc');
    const cid = await runServiceContainer(engine, tenant, sid);
    addService(db, tenant, { containerId: cid, status: 'crashed', crashCount: 1, crashWindowStart: nowSec() }, sid);
    await waitFor('10 s of uptime', async () => nowSec() - (await docker.inspectContainer(cid)).startedAt >= 11, 20_000, 500);
    expect(await runTick(env, deps())).toMatchObject({ recovered: 1, crashes: 0 });
    expect(service(db, sid)).toMatchObject({ status: 'running', crash_count: 1 });
  });
});
