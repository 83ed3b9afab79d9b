/**
 * Fault 1: the worker is SIGKILLed in the middle of a tick, after the crash is recorded and the circuit row
 * opened, before the container is stopped and the circuit workflow started. A real worker process, the real
 * dev server, a real exited container; the kill is the worker's own SIGKILL (worker-child.ts).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { DockerClient } from '../../src/docker/client';
import { circuitStateQuery } from '../../src/workflows/messages';
import { ids, taskQueueFor } from '../../src/ids';
import { reconcileTick } from '../../src/workflows';
import { HEARTBEAT_TIMEOUT_MS } from '../../src/contracts/timeouts';
import { EngineFixture, freshDb, uniqueId, waitFor } from '../helpers/fixtures';
import { devServerForFile } from '../helpers/temporal';
import { addServiceWithExitedContainer, addTenant, deployments, service } from '../reconcile/rows';
import { startChildWorker, type ChildWorker } from './helpers';

/** The retry's initial interval (1 s) and the restarted worker's pick-up, generously: far below the old 2 min. */
const RETRY_AND_SCHEDULING_MS = 15_000;
const engine = new EngineFixture();
const env = devServerForFile(engine);
const docker = new DockerClient();
const workers: ChildWorker[] = [];

// Registered after devServerForFile's, so it runs first: the workers go before the engine cleanup and the connection.
afterAll(async () => {
  for (const w of workers) await w.kill();
});

describe('fault 1: worker SIGKILLed between recording a crash and opening the circuit', () => {
  it('after a restart: one count, one deployment row, a consistent circuit (row and workflow), and the tick completes', async () => {
    const { db, file } = freshDb();
    const host = uniqueId('host-rel1-');
    const tenant = addTenant(db);
    const { sid, cid } = await addServiceWithExitedContainer(engine, db, tenant, {}, 3);
    const workerEnv = {
      TEMPORAL_ADDRESS: inject('devServerAddress'),
      KEEPER_TEST_BUNDLE: inject('workflowBundlePath'),
      KEEPER_DB: file,
      KEEPER_HOST_ID: host,
      KEEPER_CRASH_THRESHOLD: '1',
      KEEPER_CIRCUIT_BACKOFF: '1h',
    };

    const doomed = startChildWorker({ ...workerEnv, KEEPER_TEST_KILL_ON_STOP: '1' });
    workers.push(doomed);
    await doomed.ready();
    const tickId = uniqueId('tick-rel1-');
    const tick = await env.client.workflow.start(reconcileTick, { taskQueue: taskQueueFor(host), workflowId: tickId });
    expect(await doomed.exited).toBe('SIGKILL');

    // The kill point: crash counted and circuit row open, no circuit workflow yet.
    expect(service(db, sid)).toMatchObject({ crash_count: 1, circuit_open: 1, circuit_open_count: 1 });
    expect(deployments(db, sid)).toHaveLength(1);
    const circuitId = ids.circuit(host, sid);
    await expect(env.client.workflow.getHandle(circuitId).describe()).rejects.toThrow(/not found/i);

    const restarted = startChildWorker(workerEnv);
    workers.push(restarted);
    await restarted.ready();
    const t0 = Date.now();
    // The lost attempt stopped heartbeating at the kill: it times out after the heartbeat timeout and is retried
    // on the restarted worker, instead of waiting out a start-to-close timeout sized for the slowest step (2 min).
    const summary = await tick.result();
    const waitedMs = Date.now() - t0;
    console.log(
      `fault 1: tick completed ${Math.round(waitedMs / 1000)} s after the restart`,
      JSON.stringify({ crashes: summary.crashes, opened: summary.opened }),
    );
    expect(waitedMs).toBeLessThan(HEARTBEAT_TIMEOUT_MS + RETRY_AND_SCHEDULING_MS);

    // One count: the retried attempt finds the look already swapped and counts nothing; it hands the circuit
    // opened by the killed attempt to its workflow again (below), not as a new opening.
    expect(summary).toMatchObject({ crashes: 0, opened: 0 });
    const row = service(db, sid);
    expect(row).toMatchObject({ status: 'crashed', crash_count: 1, circuit_open: 1, circuit_open_count: 1 });
    expect(deployments(db, sid)).toHaveLength(1);
    const state = await waitFor('circuit workflow holding the circuit', async () => {
      const s = await env.client.workflow.getHandle(circuitId).query(circuitStateQuery);
      return s.opening !== undefined ? s : undefined; // no opening: its holdCircuit has not answered yet
    });
    // The one death counted (by the killed attempt) is the circuit's evidence, exactly once.
    expect(state).toEqual({
      serviceId: sid,
      opening: 1,
      escalation: row.circuit_open_count,
      retryAt: row.circuit_retry_at,
      phase: 'open',
      deaths: [{ containerId: cid.slice(0, 12), diedAtMs: expect.any(Number), reason: 'exit code 3' }],
    });
    expect((await env.client.workflow.getHandle(circuitId).describe()).status.name).toBe('RUNNING');
    expect((await docker.inspectContainer(cid)).status).toBe('exited'); // kept for its logs

    // A later tick counts nothing more and starts no second workflow.
    const again = await env.client.workflow.execute(reconcileTick, { taskQueue: taskQueueFor(host), workflowId: uniqueId('tick-rel1-') });
    expect(again.crashes).toBe(0);
    expect(service(db, sid).crash_count).toBe(1);
    expect(deployments(db, sid)).toHaveLength(1);

    await env.client.workflow.getHandle(circuitId).terminate('test over');
    await restarted.kill();
    db.close();
  }, 120_000);
});
