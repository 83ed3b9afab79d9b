/**
 * An operator resets a circuit with the real Temporal CLI, `temporal workflow signal … --name reset`, exactly
 * as the README shows; keeper's circuit workflow recovers the service through its opening's compare-and-set.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { inject } from 'vitest';
import { openStateDb, type StateDb } from '../../src/db/open';
import { ids, taskQueueFor } from '../../src/ids';
import type { CircuitState } from '../../src/contracts/circuit';
import { resolveTemporalCli } from '../../src/temporal/dev-server';
import { EngineFixture, tempDir, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { devServerEnv, keeperWorker } from '../helpers/temporal';
import { addService, addTenant, nowSec, runServiceContainer, service } from '../reconcile/rows';

const engine = new EngineFixture();
let env: TestWorkflowEnvironment;
let db: StateDb;
beforeAll(async () => {
  env = await devServerEnv();
  db = openStateDb(path.join(tempDir(), 'state.db'));
});
afterAll(async () => {
  await engine.cleanup();
  db?.close();
  await env?.teardown();
});

it('closes an open circuit on `temporal workflow signal --name reset`', async () => {
  const settings = testSettings();
  const tenant = addTenant(db);
  const sid = uniqueId('svc');
  const cid = await runServiceContainer(engine, tenant, sid, {}, false);
  addService(
    db,
    tenant,
    {
      status: 'crashed',
      containerId: cid,
      crashCount: 5,
      crashWindowStart: nowSec() - 60,
      circuitOpen: 1,
      circuitOpenCount: 1,
      circuitRetryAt: nowSec() + 1800,
    },
    sid,
  );

  const worker = await keeperWorker(env, { db, docker: engine.docker, settings });
  const workflowId = ids.circuit(settings.hostId, sid);
  const state = await worker.runUntil(async () => {
    const handle = await env.client.workflow.start('circuitBreaker', {
      taskQueue: taskQueueFor(settings.hostId),
      workflowId,
      args: [{ serviceId: sid }],
    });
    await waitFor('the circuit to hold its timer', async () => (await handle.query<CircuitState>('state')).retryAt > 0);
    // What the operator reads first: the run's current details, through the CLI (the UI shows the same).
    const { stdout } = await promisify(execFile)(resolveTemporalCli(), [
      'workflow',
      'metadata',
      '--workflow-id',
      workflowId,
      '--address',
      inject('devServerAddress'),
      '--namespace',
      'default',
    ]);
    expect(stdout).toContain(`open (opening 1, escalation 1) until`);
    expect(stdout).toContain(`reset: keeper circuit reset ${sid}`);
    await promisify(execFile)(resolveTemporalCli(), [
      'workflow',
      'signal',
      '--workflow-id',
      workflowId,
      '--name',
      'reset',
      '--input',
      '"from the temporal CLI"',
      '--address',
      inject('devServerAddress'),
      '--namespace',
      'default',
    ]);
    return (await handle.result()) as CircuitState;
  });
  expect(state).toMatchObject({ phase: 'closed', closedBy: 'reset', opening: 1, escalation: 1 });
  expect(service(db, sid)).toMatchObject({ circuit_open: 0, crash_count: 0, status: 'running' });
  expect((await engine.docker.inspectContainer(cid)).status).toBe('running');
});
