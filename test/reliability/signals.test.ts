/**
 * Signals to the circuit workflow with a wrong payload, or an unknown name: logged and ignored, the circuit
 * stays open. A reset with no payload is a reset (the reason is optional, `keeper circuit reset` sends one).
 * Real workflow and activities on the dev server; the service's container id is well-formed but gone (404).
 */
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DockerClient } from '../../src/docker/client';
import { circuitStateQuery } from '../../src/workflows/messages';
import type { CircuitState } from '../../src/contracts/circuit';
import { ids, taskQueueFor } from '../../src/ids';
import { circuitBreaker } from '../../src/workflows';
import { freshDb, testSettings, waitFor } from '../helpers/fixtures';
import { devServerForFile, keeperWorker } from '../helpers/temporal';
import { addService, addTenant, deployments, nowSec, service } from '../reconcile/rows';

const env = devServerForFile();

describe('circuit workflow signals', () => {
  it('a reset with a number, object, array or boolean payload, or an unknown signal, is ignored; a reset without payload closes it', async () => {
    const { db } = freshDb();
    const settings = testSettings({ recovery: 'stop' });
    const tenant = addTenant(db);
    const sid = addService(db, tenant, {
      status: 'crashed',
      containerId: crypto.randomBytes(32).toString('hex'),
      crashCount: 5,
      circuitOpen: 1,
      circuitOpenCount: 1,
      circuitRetryAt: nowSec() + 3600,
    });
    const worker = await keeperWorker(env, { db, docker: new DockerClient(), settings });
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(circuitBreaker, {
        taskQueue: taskQueueFor(settings.hostId),
        workflowId: ids.circuit(settings.hostId, sid),
        args: [{ serviceId: sid }],
      });
      const open = await waitFor('the circuit held', async () => {
        const s = await handle.query(circuitStateQuery);
        return s.opening === 1 ? s : undefined;
      });
      for (const payload of [42, { reason: 'x' }, ['x'], true]) await handle.signal('reset', payload as never);
      await handle.signal('rest', 'typo in the name');
      await handle.signal('reset', 7 as never);
      // Queries run after every signal before them is handled: this state has seen all six.
      const after = await handle.query(circuitStateQuery);
      expect(after).toEqual(open);
      expect(after.phase).toBe('open');
      expect(service(db, sid)).toMatchObject({ circuit_open: 1, crash_count: 5 });
      expect(deployments(db, sid)).toHaveLength(0);

      await handle.signal('reset');
      const result = (await handle.result()) as CircuitState;
      expect(result).toMatchObject({ phase: 'closed', closedBy: 'reset', status: 'stopped' });
      expect(service(db, sid)).toMatchObject({ circuit_open: 0, crash_count: 0, status: 'stopped' });
      expect(deployments(db, sid).map((d) => d.trigger)).toEqual(['manual_reset']);
      const history = await handle.fetchHistory();
      const signals = (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes).length;
      console.log(`signals: ${signals} signals in the history, 6 ignored, the 7th (no payload) closed the circuit`);
      expect(signals).toBe(7);
    });
    db.close();
  }, 60_000);
});
