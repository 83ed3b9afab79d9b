/**
 * The circuit breaker on the Java time-skipping server: its durable timer (30 min, then 4 h at escalation 3)
 * passes in moments, the reset signal, and recovery attempts on one opening that race. Containers and the SQLite
 * file are real.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { circuitResetSignal, circuitStateQuery } from '../../src/workflows/messages';
import { ids, taskQueueFor } from '../../src/ids';
import type { Settings } from '../../src/settings';
import { circuitBreaker, reconcileTick } from '../../src/workflows';
import { EngineFixture, freshDb, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { keeperWorker, ownTimeSkippingServerForFile } from '../helpers/temporal';
import {
  activities,
  addService,
  addServiceWithExitedContainer,
  addTenant,
  deployments,
  nowSec,
  runServiceContainer,
  service,
} from './helpers';

// Real activities and workers that stop between tests: a server of this file's own (see the helper).
const env = ownTimeSkippingServerForFile();
let db: StateDb;
let settings: Settings;
let tenant: string;
const engine = new EngineFixture();
const docker = new DockerClient();
const deps = () => ({ db, docker, settings });

afterEach(async () => {
  await engine.cleanup();
  db?.close();
});

function setup(recovery: 'restart' | 'stop' = 'restart') {
  db = freshDb().db;
  settings = testSettings({ recovery });
  tenant = addTenant(db);
}

/** A service whose circuit ah opened (escalation `gen`, retry in `inSec`) and whose kept container is stopped. */
async function openCircuit(gen: number, inSec: number): Promise<{ sid: string; cid: string }> {
  const sid = uniqueId('svc');
  const cid = await runServiceContainer(engine, tenant, sid, { restartPolicy: 'no' }, false);
  addService(
    db,
    tenant,
    {
      status: 'crashed',
      containerId: cid,
      crashCount: 5,
      crashWindowStart: nowSec() - 60,
      circuitOpen: 1,
      circuitOpenCount: gen,
      circuitRetryAt: nowSec() + inSec,
    },
    sid,
  );
  return { sid, cid };
}

function startCircuit(sid: string) {
  return env.client.workflow.start(circuitBreaker, {
    taskQueue: taskQueueFor(settings.hostId),
    workflowId: ids.circuit(settings.hostId, sid),
    args: [{ serviceId: sid }],
  });
}

describe('circuitBreaker (time-skipping)', () => {
  it('recovers at retry time: circuit closed, counters reset, kept container started (recovery=restart)', async () => {
    setup('restart');
    const { sid, cid } = await openCircuit(1, 1800);
    const worker = await keeperWorker(env, deps());
    const t0 = await env.currentTimeMs();
    const result = await worker.runUntil(async () => (await startCircuit(sid)).result());
    expect(result).toMatchObject({ phase: 'closed', closedBy: 'timer', opening: 1, escalation: 1, status: 'running' });
    expect((await env.currentTimeMs()) - t0).toBeGreaterThanOrEqual(1790_000);
    expect(service(db, sid)).toMatchObject({
      status: 'running',
      circuit_open: 0,
      crash_count: 0,
      crash_window_start: null,
      circuit_retry_at: null,
      circuit_open_count: 1,
    });
    expect(deployments(db, sid)).toEqual([expect.objectContaining({ status: 'running', trigger: 'auto_recovery' })]);
    expect((await docker.inspectContainer(cid)).status).toBe('running');
  });

  it('with recovery=stop leaves the service stopped and the container stopped (the seed)', async () => {
    setup('stop');
    const { sid, cid } = await openCircuit(1, 1800);
    const worker = await keeperWorker(env, deps());
    const result = await worker.runUntil(async () => (await startCircuit(sid)).result());
    expect(result).toMatchObject({ closedBy: 'timer', status: 'stopped' });
    expect(service(db, sid)).toMatchObject({ status: 'stopped', circuit_open: 0, crash_count: 0 });
    expect(deployments(db, sid)).toEqual([expect.objectContaining({ status: 'stopped', trigger: 'auto_recovery' })]);
    expect((await docker.inspectContainer(cid)).status).not.toBe('running');
  });

  it('answers the state query and closes at once on the reset signal', async () => {
    setup('restart');
    const { sid } = await openCircuit(2, 3600);
    const worker = await keeperWorker(env, deps());
    const result = await worker.runUntil(async () => {
      const handle = await startCircuit(sid);
      const state = await waitFor('the circuit to be held', async () => {
        const s = await handle.query(circuitStateQuery);
        return s.opening !== undefined ? s : undefined;
      });
      // ah opened it (at escalation 2): its workflow takes it over as keeper's first opening of this service.
      expect(state).toMatchObject({ serviceId: sid, opening: 1, escalation: 2, phase: 'open', retryAt: service(db, sid).circuit_retry_at });
      await handle.signal(circuitResetSignal, 'test');
      return handle.result();
    });
    // closedBy 'reset' means the condition, not the 1 h timer, ended the wait.
    expect(result).toMatchObject({ closedBy: 'reset', status: 'running' });
    expect(deployments(db, sid)).toEqual([expect.objectContaining({ status: 'running', trigger: 'manual_reset' })]);
  });

  it('recovers an opening once, however many attempts race (activity retries, reset + timer, the tick)', async () => {
    setup('restart');
    const { sid } = await openCircuit(1, 60);
    const acts = activities(deps());
    expect(await acts.holdCircuit(sid)).toMatchObject({ open: true, opening: 1, escalation: 1 });
    const attempts = await Promise.all([1, 2, 3].map(() => acts.recoverCircuit(sid, 1, 'auto_recovery', 1)));
    expect(attempts.filter((a) => a.recovered)).toHaveLength(1);
    // A workflow for the same opening now finds nothing to do.
    const worker = await keeperWorker(env, deps());
    const result = await worker.runUntil(async () => (await startCircuit(sid)).result());
    expect(result).toMatchObject({ phase: 'closed', closedBy: 'superseded' });
    expect(await acts.recoverCircuit(sid, 1, 'manual_reset', 1)).toEqual({ recovered: false });
    expect(deployments(db, sid)).toHaveLength(1);
  });

  it("escalates to 4 h at escalation 3: a tick opens it (keeper's first opening of it) and starts the circuit workflow, which waits 4 h, then recovers", async () => {
    setup('restart');
    const { sid } = await addServiceWithExitedContainer(
      engine,
      db,
      tenant,
      { crashCount: 4, crashWindowStart: nowSec() - 100, circuitOpenCount: 2 },
      2,
    );

    // One worker for the tick and the circuit workflow it starts: the Java test server never hands a workflow
    // task on to another worker once the one that ran it has gone (its sticky queue is not timed out).
    const worker = await keeperWorker(env, deps());
    const t0 = await env.currentTimeMs();
    const result = await worker.runUntil(async () => {
      const tick = await env.client.workflow.execute(reconcileTick, {
        taskQueue: taskQueueFor(settings.hostId),
        workflowId: uniqueId('tick-'),
      });
      expect(tick).toMatchObject({ crashes: 1, opened: 1 });
      const row = service(db, sid);
      expect(row).toMatchObject({ circuit_open: 1, circuit_open_count: 3 });
      expect(row.circuit_retry_at! - nowSec()).toBeGreaterThan(4 * 3600 - 30);
      return env.client.workflow.getHandle<typeof circuitBreaker>(ids.circuit(settings.hostId, sid)).result();
    });
    expect(result).toMatchObject({ closedBy: 'timer', opening: 1, escalation: 3, status: 'running' });
    expect((await env.currentTimeMs()) - t0).toBeGreaterThan(4 * 3600_000 - 60_000);
    expect(service(db, sid)).toMatchObject({ circuit_open: 0, status: 'running', circuit_open_count: 3 });
  }); // the 4 h themselves are skipped
});
