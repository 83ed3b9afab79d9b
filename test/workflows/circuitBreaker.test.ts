/**
 * circuitBreaker with stub activities on the time-skipping server: the durable timer (30 min pass in moments),
 * the reset signal and the payloads it ignores, the opening's compare-and-set reported as `superseded`, and a run
 * of an older opening that continues as new to hold a newer one (asked by the tick's `recheck`, or told by its
 * recovery). Escalation decay is not the workflow's: it is `housekeep`'s, in the DB layer.
 */
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it, vi } from 'vitest';
import type { Activities } from '../../src/loops/registry';
import type { HeldCircuit } from '../../src/contracts/circuit';
import { circuitRecheckSignal, circuitResetSignal, circuitStateQuery } from '../../src/workflows/messages';
import { circuitBreaker } from '../../src/workflows';
import { ids } from '../../src/ids';
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

/** Opening `opening` held, at escalation `escalation` (the same number, unless a test says). */
const open = (opening: number, remainingMs: number, escalation = opening): HeldCircuit => ({
  open: true,
  opening,
  escalation,
  retryAt: RETRY_AT_SEC,
  remainingMs,
});

describe('circuitBreaker', () => {
  it('closes by its durable timer once remainingMs has passed (time skipped), recovering that opening', async () => {
    const stubs = circuitStubs(open(7, 30 * MINUTE_MS, 3));
    const { result, handle } = await executeWithStubs(env, stubs, circuitBreaker, { serviceId: 'svc-a' });
    expect(result).toEqual({
      serviceId: 'svc-a',
      opening: 7,
      escalation: 3,
      retryAt: RETRY_AT_SEC,
      phase: 'closed',
      closedBy: 'timer',
      status: 'running',
      deaths: [],
    });
    expect(stubs.holdCircuit).toHaveBeenCalledWith('svc-a');
    expect(stubs.recoverCircuit.mock.calls).toEqual([['svc-a', 3, 'auto_recovery', 7]]);
    const waitedMs = await elapsedMs(handle);
    expect(waitedMs).toBeGreaterThanOrEqual(30 * MINUTE_MS);
    expect(waitedMs).toBeLessThan(31 * MINUTE_MS);
  });

  it('recovers at once when the retry time has already passed', async () => {
    const stubs = circuitStubs(open(1, 0), { recovered: true, status: 'stopped' });
    const { result, handle } = await executeWithStubs(env, stubs, circuitBreaker, { serviceId: 'svc-b' });
    expect(result).toMatchObject({ closedBy: 'timer', status: 'stopped' });
    expect(stubs.recoverCircuit.mock.calls).toEqual([['svc-b', 1, 'auto_recovery', 1]]);
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
        return s.opening === 2 ? s : undefined;
      });
      expect(state).toEqual({ serviceId: 'svc-c', opening: 2, escalation: 2, retryAt: RETRY_AT_SEC, phase: 'open', deaths: [] });
      // Its current details, as the Temporal UI reads them: where it stands, in words.
      const details = async () => (await handle.query<{ currentDetails: string }>('__temporal_workflow_metadata')).currentDetails;
      expect(await details()).toBe('open (opening 2, escalation 2) until 2030-03-17T17:46:40Z; reset: keeper circuit reset svc-c');
      await handle.signal(circuitResetSignal, 'operator says so');
      return { result: await handle.result(), waitedMs: await elapsedMs(handle) };
    });
    expect(result).toMatchObject({ phase: 'closed', closedBy: 'reset', status: 'running' });
    expect(stubs.recoverCircuit.mock.calls).toEqual([['svc-c', 2, 'manual_reset', 2]]);
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
    expect(stubs.recoverCircuit.mock.calls).toEqual([['svc-d', 2, 'auto_recovery', 2]]);
    expect(waitedMs).toBeGreaterThanOrEqual(45 * MINUTE_MS);
  });

  it('reports superseded when recovery finds its opening closed already (the compare-and-set said no)', async () => {
    const stubs = circuitStubs(open(4, 10 * MINUTE_MS), { recovered: false });
    const { result } = await executeWithStubs(env, stubs, circuitBreaker, { serviceId: 'svc-e' });
    expect(result).toEqual({
      serviceId: 'svc-e',
      opening: 4,
      escalation: 4,
      retryAt: RETRY_AT_SEC,
      phase: 'closed',
      closedBy: 'superseded',
      deaths: [],
    });
    expect(stubs.recoverCircuit).toHaveBeenCalledTimes(1);
  });

  it('closes as superseded without recovery when holdCircuit finds the circuit not open', async () => {
    const stubs = circuitStubs({ open: false, opening: 5, escalation: 5, retryAt: 0, remainingMs: 0 });
    const { result, handle } = await executeWithStubs(env, stubs, circuitBreaker, { serviceId: 'svc-f' });
    expect(result).toEqual({ serviceId: 'svc-f', opening: 5, escalation: 5, retryAt: 0, phase: 'closed', closedBy: 'superseded' });
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

  it('continues as new to hold a newer opening a tick asks it to (recheck), which closes by its own timer', async () => {
    // Opening 1 retries in 4 h; while it waits, ah closed it and opening 2 (escalation 1 again, after a decay) opened.
    const stubs = circuitStubs(open(1, 4 * 60 * MINUTE_MS));
    stubs.holdCircuit.mockResolvedValueOnce(open(1, 4 * 60 * MINUTE_MS)).mockResolvedValueOnce(open(2, 30 * MINUTE_MS, 1));
    const { result, waitedMs, runs } = await withStubWorker(env, stubs, async (taskQueue) => {
      const handle = await env.client.workflow.start(circuitBreaker, {
        taskQueue,
        workflowId: 'circuit-recheck-' + taskQueue,
        args: [{ serviceId: 'svc-l' }],
      });
      await waitFor('opening 1 held', async () => (await handle.query(circuitStateQuery)).opening === 1);
      // Its own opening, and payloads that are no opening number: nothing to do.
      await handle.signal(circuitRecheckSignal, 1);
      for (const payload of ['2', -2, 2.5]) await handle.signal('recheck', payload);
      expect(await handle.query(circuitStateQuery)).toMatchObject({ opening: 1, phase: 'open' });
      await handle.signal(circuitRecheckSignal, 2);
      const result = await handle.result();
      const first = await env.client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe();
      const last = await handle.describe();
      return { result, waitedMs: last.closeTime!.getTime() - first.startTime.getTime(), runs: [first.status.name, last.status.name] };
    });
    expect(runs).toEqual(['CONTINUED_AS_NEW', 'COMPLETED']);
    expect(result).toMatchObject({ serviceId: 'svc-l', opening: 2, escalation: 1, phase: 'closed', closedBy: 'timer', status: 'running' });
    // Opening 1 is never recovered by this run; opening 2 is, after its own 30 min, not opening 1's 4 h.
    expect(stubs.recoverCircuit.mock.calls).toEqual([['svc-l', 1, 'auto_recovery', 2]]);
    expect(waitedMs).toBeGreaterThanOrEqual(30 * MINUTE_MS);
    expect(waitedMs).toBeLessThan(4 * 60 * MINUTE_MS);
  });

  it('continues as new when its recovery finds the circuit open on a newer opening, taking the reset along', async () => {
    const stubs = circuitStubs(open(1, 60 * MINUTE_MS));
    stubs.holdCircuit.mockResolvedValueOnce(open(1, 60 * MINUTE_MS)).mockResolvedValueOnce(open(2, 60 * MINUTE_MS, 1));
    stubs.recoverCircuit.mockResolvedValueOnce({ recovered: false, reopened: true });
    const { result, waitedMs } = await withStubWorker(env, stubs, async (taskQueue) => {
      const handle = await env.client.workflow.start(circuitBreaker, {
        taskQueue,
        workflowId: 'circuit-reopened-' + taskQueue,
        args: [{ serviceId: 'svc-m' }],
      });
      await waitFor('opening 1 held', async () => (await handle.query(circuitStateQuery)).opening === 1);
      await handle.signal(circuitResetSignal, 'operator says so');
      return { result: await handle.result(), waitedMs: await elapsedMs(handle) };
    });
    expect(result).toMatchObject({ opening: 2, closedBy: 'reset', status: 'running' });
    expect(stubs.recoverCircuit.mock.calls).toEqual([
      ['svc-m', 1, 'manual_reset', 1],
      ['svc-m', 1, 'manual_reset', 2],
    ]);
    expect(waitedMs).toBeLessThan(60 * MINUTE_MS); // the continuation reset opening 2 at once
  });

  it('a run from before openings, asked to recheck, holds its opening if it is still its own and waits on; else continues as new', async () => {
    const legacy: HeldCircuit = { open: true, generation: 2, retryAt: RETRY_AT_SEC, remainingMs: 60 * MINUTE_MS };
    const stubs = { ...circuitStubs(legacy), holdSameOpening: vi.fn<Activities['holdSameOpening']>(async () => 5) };
    const mine = await withStubWorker(env, stubs, async (taskQueue) => {
      const handle = await env.client.workflow.start(circuitBreaker, {
        taskQueue,
        workflowId: 'circuit-legacy-recheck-' + taskQueue,
        args: [{ serviceId: 'svc-o' }],
      });
      await waitFor('held by escalation', async () => (await handle.query(circuitStateQuery)).escalation === 2);
      await handle.signal(circuitRecheckSignal, 5);
      await waitFor('its opening learned', async () => (await handle.query(circuitStateQuery)).opening === 5);
      await handle.signal(circuitRecheckSignal, 5); // now a number like any run's: its own, nothing to do
      return { result: await handle.result(), waitedMs: await elapsedMs(handle) };
    });
    expect(stubs.holdSameOpening.mock.calls).toEqual([['svc-o', 2, RETRY_AT_SEC]]);
    expect(mine.result).toMatchObject({ opening: 5, escalation: 2, closedBy: 'timer' });
    expect(mine.waitedMs).toBeGreaterThanOrEqual(60 * MINUTE_MS); // it waited on to its own retry time
    expect(stubs.recoverCircuit.mock.calls).toEqual([['svc-o', 2, 'auto_recovery', 5]]);

    const gone = { ...circuitStubs(legacy), holdSameOpening: vi.fn<Activities['holdSameOpening']>(async () => undefined) };
    gone.holdCircuit.mockResolvedValueOnce(legacy).mockResolvedValueOnce(open(6, 0, 1));
    const newer = await withStubWorker(env, gone, async (taskQueue) => {
      const handle = await env.client.workflow.start(circuitBreaker, {
        taskQueue,
        workflowId: 'circuit-legacy-superseded-' + taskQueue,
        args: [{ serviceId: 'svc-p' }],
      });
      await waitFor('held by escalation', async () => (await handle.query(circuitStateQuery)).escalation === 2);
      await handle.signal(circuitRecheckSignal, 6);
      return handle.result();
    });
    expect(newer).toMatchObject({ opening: 6, escalation: 1, closedBy: 'timer' });
    expect(gone.recoverCircuit.mock.calls).toEqual([['svc-p', 1, 'auto_recovery', 6]]);
  });

  // The tests below start alerts (notifyOperators children, abandoned): after one, this Java test server no longer
  // skips time for a later timer (seen here: a 30 min timer then waited in real time), so every test that waits on
  // a timer comes before them.
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
      opening: 2,
      escalation: 2,
      retryAt: RETRY_AT_SEC,
      phase: 'closed',
      closedBy: 'reset',
      status: 'running',
      deaths,
    });
    expect(memo).toEqual({ deaths, retryAt: RETRY_AT_SEC });
    expect(alerts).toMatchObject([
      { kind: 'circuit-opened', hostId: 'h1', serviceId: 'svc-h', opening: 2, escalation: 2, retryAt: RETRY_AT_SEC, deaths },
      { kind: 'circuit-closed', hostId: 'h1', serviceId: 'svc-h', opening: 2, escalation: 2, closedBy: 'reset', status: 'running' },
    ]);
    // Each event's alert is a workflow of its own, named by the opening.
    for (const kind of ['circuit-opened', 'circuit-closed'])
      expect((await env.client.workflow.getHandle(ids.notify('h1', 'svc-h', 2, kind)).describe()).status.name).toBe('COMPLETED');
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

  it('starts no alert on a host without webhooks, nor for a superseded opening', async () => {
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

  it('recovers a hold with no opening (a result recorded before openings) by escalation, and alerts by generation', async () => {
    const legacy: HeldCircuit = {
      open: true,
      generation: 2,
      retryAt: RETRY_AT_SEC,
      remainingMs: 0,
      hostId: 'h1',
      alerts: true,
      deaths: [],
    };
    const stubs = { ...circuitStubs(legacy), ...alertStubs() };
    const { result } = await executeWithStubs(env, stubs, circuitBreaker, { serviceId: 'svc-n' });
    expect(result).toMatchObject({ escalation: 2, closedBy: 'timer' });
    expect(result).not.toHaveProperty('opening');
    expect(stubs.recoverCircuit.mock.calls).toEqual([['svc-n', 2, 'auto_recovery', undefined, RETRY_AT_SEC]]);
    expect(stubs.deliverNotification.mock.calls.map((c) => c[1])).toMatchObject([
      { kind: 'circuit-opened', generation: 2 },
      { kind: 'circuit-closed', generation: 2 },
    ]);
    expect((await env.client.workflow.getHandle(ids.notifyByGeneration('h1', 'svc-n', 2, 'circuit-closed')).describe()).status.name).toBe(
      'COMPLETED',
    );
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
