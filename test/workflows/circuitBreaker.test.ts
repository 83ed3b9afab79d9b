/**
 * circuitBreaker with stub activities on the time-skipping server: the durable timer (30 min pass in moments),
 * the reset signal and the payloads it ignores, and the generation compare-and-set reported as `superseded`.
 * Escalation decay is not the workflow's: it is `housekeep`'s, in the DB layer (see reconcileTick.test.ts).
 */
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it, vi } from 'vitest';
import type { Activities } from '../../src/activities';
import type { HeldCircuit } from '../../src/contracts/circuit';
import { circuitResetSignal, circuitStateQuery } from '../../src/workflows/messages';
import { circuitBreaker } from '../../src/workflows';
import { waitFor } from '../helpers/fixtures';
import { elapsedMs, executeWithStubs, stubWorkerEnvForFile, withStubWorker } from './helpers';

// A server of its own: its tests skip 30-minute timers, and a workflow task another file's run left pending on
// the shared server stops time skipping there (seen in full-suite runs).
const env = stubWorkerEnvForFile({ ownServer: true });
const MINUTE_MS = 60_000;
const RETRY_AT_SEC = 1_900_000_000;

function circuitStubs(
  held: HeldCircuit,
  recovered: Awaited<ReturnType<Activities['recoverCircuit']>> = { recovered: true, status: 'running' },
) {
  return {
    holdCircuit: vi.fn<Activities['holdCircuit']>(async () => held),
    recoverCircuit: vi.fn<Activities['recoverCircuit']>(async () => recovered),
  } satisfies Pick<Activities, 'holdCircuit' | 'recoverCircuit'>;
}

const open = (generation: number, remainingMs: number): HeldCircuit => ({ open: true, generation, retryAt: RETRY_AT_SEC, remainingMs });

describe('circuitBreaker', () => {
  it('closes by its durable timer once remainingMs has passed (time skipped), recovering that generation', async () => {
    const stubs = circuitStubs(open(3, 30 * MINUTE_MS));
    const { result, handle } = await executeWithStubs(env, stubs, circuitBreaker, { serviceId: 'svc-a' });
    expect(result).toEqual({
      serviceId: 'svc-a',
      generation: 3,
      retryAt: RETRY_AT_SEC,
      phase: 'closed',
      closedBy: 'timer',
      status: 'running',
      deaths: [],
    });
    expect(stubs.holdCircuit).toHaveBeenCalledWith('svc-a');
    expect(stubs.recoverCircuit.mock.calls).toEqual([['svc-a', 3, 'auto_recovery']]);
    const waitedMs = await elapsedMs(handle);
    expect(waitedMs).toBeGreaterThanOrEqual(30 * MINUTE_MS);
    expect(waitedMs).toBeLessThan(31 * MINUTE_MS);
  });

  it('recovers at once when the retry time has already passed', async () => {
    const stubs = circuitStubs(open(1, 0), { recovered: true, status: 'stopped' });
    const { result, handle } = await executeWithStubs(env, stubs, circuitBreaker, { serviceId: 'svc-b' });
    expect(result).toMatchObject({ closedBy: 'timer', status: 'stopped' });
    expect(stubs.recoverCircuit.mock.calls).toEqual([['svc-b', 1, 'auto_recovery']]);
    expect(await elapsedMs(handle)).toBeLessThan(MINUTE_MS);
  });

  it('answers the state query while open and closes by the reset signal, long before its timer', async () => {
    const stubs = circuitStubs(open(2, 60 * MINUTE_MS));
    const { result, waitedMs } = await withStubWorker(env, stubs, async (taskQueue) => {
      const handle = await env.client.workflow.start(circuitBreaker, {
        taskQueue,
        workflowId: 'circuit-reset-' + taskQueue,
        args: [{ serviceId: 'svc-c' }],
      });
      const state = await waitFor('the circuit to be held', async () => {
        const s = await handle.query(circuitStateQuery);
        return s.generation === 2 ? s : undefined;
      });
      expect(state).toEqual({ serviceId: 'svc-c', generation: 2, retryAt: RETRY_AT_SEC, phase: 'open', deaths: [] });
      // Its current details, as the Temporal UI reads them: where it stands, in words.
      const details = async () => (await handle.query<{ currentDetails: string }>('__temporal_workflow_metadata')).currentDetails;
      expect(await details()).toBe('open (generation 2) until 2030-03-17T17:46:40Z; reset: keeper circuit reset svc-c');
      await handle.signal(circuitResetSignal, 'operator says so');
      return { result: await handle.result(), waitedMs: await elapsedMs(handle) };
    });
    expect(result).toMatchObject({ phase: 'closed', closedBy: 'reset', status: 'running' });
    expect(stubs.recoverCircuit.mock.calls).toEqual([['svc-c', 2, 'manual_reset']]);
    expect(waitedMs).toBeLessThan(60 * MINUTE_MS);
  });

  it('ignores a reset whose payload is not a reason string: the timer closes it', async () => {
    const stubs = circuitStubs(open(2, 45 * MINUTE_MS));
    const { result, waitedMs } = await withStubWorker(env, stubs, async (taskQueue) => {
      const handle = await env.client.workflow.start(circuitBreaker, {
        taskQueue,
        workflowId: 'circuit-bad-reset-' + taskQueue,
        args: [{ serviceId: 'svc-d' }],
      });
      // Sent by name: the typed signal definition would not let a test send what an operator's tool might.
      for (const payload of [42, { reason: 'x' }, ['x']]) await handle.signal('reset', payload);
      return { result: await handle.result(), waitedMs: await elapsedMs(handle) };
    });
    expect(result).toMatchObject({ closedBy: 'timer' });
    expect(stubs.recoverCircuit.mock.calls).toEqual([['svc-d', 2, 'auto_recovery']]);
    expect(waitedMs).toBeGreaterThanOrEqual(45 * MINUTE_MS);
  });

  it('reports superseded when recovery finds another generation (the compare-and-set said no)', async () => {
    const stubs = circuitStubs(open(4, 10 * MINUTE_MS), { recovered: false });
    const { result } = await executeWithStubs(env, stubs, circuitBreaker, { serviceId: 'svc-e' });
    expect(result).toEqual({
      serviceId: 'svc-e',
      generation: 4,
      retryAt: RETRY_AT_SEC,
      phase: 'closed',
      closedBy: 'superseded',
      deaths: [],
    });
    expect(stubs.recoverCircuit).toHaveBeenCalledTimes(1);
  });

  it('closes as superseded without recovery when holdCircuit finds the circuit not open', async () => {
    const stubs = circuitStubs({ open: false, generation: 5, retryAt: 0, remainingMs: 0 });
    const { result, handle } = await executeWithStubs(env, stubs, circuitBreaker, { serviceId: 'svc-f' });
    expect(result).toEqual({ serviceId: 'svc-f', generation: 5, retryAt: 0, phase: 'closed', closedBy: 'superseded' });
    expect(stubs.recoverCircuit).not.toHaveBeenCalled();
    expect(await elapsedMs(handle)).toBeLessThan(MINUTE_MS);
  });

  it('retries a recovery that failed transiently (the host queue was away), then closes', async () => {
    const stubs = circuitStubs(open(1, MINUTE_MS));
    stubs.recoverCircuit.mockRejectedValueOnce(ApplicationFailure.retryable('engine timed out', 'DockerError'));
    const { result } = await executeWithStubs(env, stubs, circuitBreaker, { serviceId: 'svc-g' });
    expect(result).toMatchObject({ closedBy: 'timer', status: 'running' });
    expect(stubs.recoverCircuit).toHaveBeenCalledTimes(2);
  });

  it('carries the deaths that opened it in its memo, state and result, and alerts opened then closed', async () => {
    const deaths = [{ diedAtMs: 1_899_999_000_000, reason: 'exit code 137 (OOM killed)', containerId: 'c0ffee' }];
    const stubs = { ...circuitStubs({ ...open(2, 60 * MINUTE_MS), hostId: 'h1', alerts: true, deaths }), ...alertStubs() };
    const { result, memo, alerts } = await withStubWorker(env, stubs, async (taskQueue) => {
      const handle = await env.client.workflow.start(circuitBreaker, {
        taskQueue,
        workflowId: 'circuit-alerts-' + taskQueue,
        args: [{ serviceId: 'svc-h' }],
      });
      await waitFor('the opened alert', async () => stubs.deliverNotification.mock.calls.length === 1);
      expect(await handle.query(circuitStateQuery)).toMatchObject({ phase: 'open', deaths });
      await handle.signal(circuitResetSignal);
      const result = await handle.result();
      await waitFor('the closed alert', async () => stubs.deliverNotification.mock.calls.length === 2);
      return { result, memo: (await handle.describe()).memo, alerts: stubs.deliverNotification.mock.calls.map((c) => c[1]) };
    });
    expect(result).toEqual({
      serviceId: 'svc-h',
      generation: 2,
      retryAt: RETRY_AT_SEC,
      phase: 'closed',
      closedBy: 'reset',
      status: 'running',
      deaths,
    });
    expect(memo).toEqual({ deaths, retryAt: RETRY_AT_SEC });
    expect(alerts).toMatchObject([
      { kind: 'circuit-opened', hostId: 'h1', serviceId: 'svc-h', generation: 2, retryAt: RETRY_AT_SEC, deaths },
      { kind: 'circuit-closed', hostId: 'h1', serviceId: 'svc-h', generation: 2, closedBy: 'reset', status: 'running' },
    ]);
  });

  it('alerts a recovery that failed: the kept container is gone', async () => {
    const error = 'kept container is gone; redeploy required';
    const stubs = {
      ...circuitStubs({ ...open(1, 0), hostId: 'h1', alerts: true, deaths: [] }, { recovered: true, status: 'stopped', error }),
      ...alertStubs(),
    };
    const { result } = await executeWithStubs(env, stubs, circuitBreaker, { serviceId: 'svc-i' });
    expect(result).toMatchObject({ closedBy: 'timer', status: 'stopped' });
    expect(stubs.deliverNotification.mock.calls.map((c) => c[1].kind)).toEqual(['circuit-opened', 'recovery-failed']);
    expect(stubs.deliverNotification.mock.calls[1][1]).toMatchObject({ error });
  });

  it('starts no alert on a host without webhooks, nor for a superseded generation', async () => {
    const quiet = { ...circuitStubs({ ...open(1, 0), hostId: 'h1', alerts: false, deaths: [] }), ...alertStubs() };
    await executeWithStubs(env, quiet, circuitBreaker, { serviceId: 'svc-j' });
    expect(quiet.planNotification).not.toHaveBeenCalled();
    const superseded = {
      ...circuitStubs({ ...open(1, 0), hostId: 'h1', alerts: true, deaths: [] }, { recovered: false }),
      ...alertStubs(),
    };
    await executeWithStubs(env, superseded, circuitBreaker, { serviceId: 'svc-k' });
    expect(superseded.deliverNotification.mock.calls.map((c) => c[1].kind)).toEqual(['circuit-opened']);
  });
});

/** The alert workflow's activities, delivering to one stub webhook at once. */
function alertStubs() {
  return {
    planNotification: vi.fn<Activities['planNotification']>(async () => ({
      targets: [{ id: 't1', shown: 'stub (t1)' }],
      retryForMs: 60_000,
    })),
    deliverNotification: vi.fn<Activities['deliverNotification']>(async () => ({ status: 200, attempt: 1 })),
    recordNotifications: vi.fn<Activities['recordNotifications']>(async () => undefined),
  } satisfies Pick<Activities, 'planNotification' | 'deliverNotification' | 'recordNotifications'>;
}
