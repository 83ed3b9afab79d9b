/**
 * Fault 3: the Temporal dev server is SIGKILLed and restarted on the same --db-filename and port while a
 * circuit is open with a 20 s backoff. A dev server of this test's own (not the suite's), a keeper worker in a
 * child process with its real schedules, a real exited container.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { lastLoopResults } from '../../src/db/loop-results';
import { circuitStateQuery } from '../../src/workflows/messages';
import type { CircuitState } from '../../src/contracts/circuit';
import { ids } from '../../src/ids';
import { freePort, startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { EngineFixture, freshDb, tempDir, uniqueId, waitFor } from '../helpers/fixtures';
import { addServiceWithExitedContainer, addTenant, deployments, nowSec, service } from '../reconcile/rows';
import { startChildWorker, type ChildWorker } from './helpers';

const engine = new EngineFixture();
const workers: ChildWorker[] = [];
let server: DevServer | undefined;
let connection: Connection | undefined;
const dir = tempDir('keeper-rel3-');

afterAll(async () => {
  for (const w of workers) await w.kill();
  await connection?.close().catch(() => undefined);
  await server?.stop();
  await engine.cleanup();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('fault 3: Temporal dev server killed and restarted while a circuit is open', () => {
  it('the circuit timer still fires after the restart, and the schedules resume', async () => {
    const dbFile = path.join(dir, 'temporal.db');
    const port = await freePort();
    server = await startDevServer({ dbFile, port });
    const { db, file } = freshDb();
    const host = uniqueId('host-rel3-');
    const tenant = addTenant(db);
    const { sid } = await addServiceWithExitedContainer(engine, db, tenant, {}, 3);
    const workerEnv = {
      TEMPORAL_ADDRESS: server.address,
      KEEPER_TEST_BUNDLE: inject('workflowBundlePath'),
      KEEPER_TEST_SCHEDULES: '1',
      KEEPER_DB: file,
      KEEPER_HOST_ID: host,
      KEEPER_CRASH_THRESHOLD: '1',
      KEEPER_CIRCUIT_BACKOFF: '20s',
      KEEPER_RECOVERY: 'stop',
      KEEPER_RECONCILE_INTERVAL: '2s',
      KEEPER_GC_INTERVAL: '1h',
      KEEPER_GC_FIRST_DELAY: '1h',
      KEEPER_POOL_INTERVAL: '1h',
      KEEPER_POOLED_TEMPLATES: '',
    };
    const first = startChildWorker(workerEnv);
    workers.push(first);
    await first.ready();
    connection = await Connection.connect({ address: server.address });
    let client = new Client({ connection });
    const circuitId = ids.circuit(host, sid);
    const opened = await waitFor(
      'the circuit workflow to hold the open circuit',
      async () => {
        const s = await client.workflow.getHandle(circuitId).query(circuitStateQuery);
        return s.phase === 'open' && s.opening !== undefined ? s : undefined; // no opening: holdCircuit not done yet
      },
      30_000,
      200,
    );
    const retryAt = service(db, sid).circuit_retry_at!;
    expect(opened).toMatchObject({ opening: 1, escalation: 1, retryAt });
    expect(retryAt - nowSec()).toBeGreaterThan(5); // the timer is still pending when the server dies

    // SIGKILL the server (and the worker with it); restart both on the same file and port.
    await connection.close();
    connection = undefined;
    server.process.kill('SIGKILL');
    await new Promise((r) => server!.process.once('exit', r));
    await first.kill();
    const killedAt = nowSec();
    server = await startDevServer({ dbFile, port });
    const restartedAt = nowSec();
    const second = startChildWorker(workerEnv);
    workers.push(second);
    await second.ready();
    connection = await Connection.connect({ address: server.address });
    client = new Client({ connection });

    const result = (await client.workflow.getHandle(circuitId).result()) as CircuitState;
    const closedAt = nowSec();
    console.log(
      `fault 3: server down ${restartedAt - killedAt} s; circuit opened with retryAt in ${retryAt - killedAt} s after the kill; closed at retryAt+${closedAt - retryAt} s`,
      JSON.stringify(result),
    );
    expect(result).toMatchObject({ serviceId: sid, opening: 1, escalation: 1, phase: 'closed', closedBy: 'timer', status: 'stopped' });
    expect(closedAt).toBeGreaterThanOrEqual(retryAt);
    expect(service(db, sid)).toMatchObject({ circuit_open: 0, status: 'stopped', crash_count: 0 });
    expect(deployments(db, sid).map((d) => d.trigger)).toEqual(['reconciler', 'auto_recovery']);

    // The schedule survived in the server's file and starts ticks again.
    const tick = await waitFor(
      'a tick started by the schedule after the restart',
      () => {
        const r = lastLoopResults(db).find((x) => x.loop === 'reconcile');
        return r && r.finishedAt > closedAt ? r : undefined;
      },
      30_000,
      200,
    );
    // Only the schedule starts ticks here; its runs are named after its action's workflow id.
    expect(tick.workflowId.startsWith(`keeper-${host}-reconcile`)).toBe(true);
    const schedule = await client.schedule.getHandle(ids.schedule(host, 'reconcile')).describe();
    expect(schedule.state.paused).toBe(false);
    db.close();
  }, 150_000);
});
