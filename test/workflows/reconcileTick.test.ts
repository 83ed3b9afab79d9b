/**
 * reconcileTick with stub activities on the time-skipping server: one local activity per pass (its summary, built
 * from stub steps here as the real one builds it), the circuit workflows it starts: one per opened or expired
 * circuit, once per service, named with the host's circuit id, and none over a circuit workflow that is already
 * running; a run that acted is found by its service; a request signalled while a reconcileOnEvents run runs makes one more pass, once.
 */
import type { temporal } from '@temporalio/proto';
import { describe, expect, it, vi } from 'vitest';
import type { Activities } from '../../src/loops/registry';
import type { HeldCircuit } from '../../src/contracts/circuit';
import type { CircuitRef, Housekeeping, TickApplied, TickObservation, TickSummary } from '../../src/contracts/reconcile';
import { ids } from '../../src/ids';
import { KeeperHost, ServiceId } from '../../src/search-attributes';
import { circuitStateQuery, moreEventsSignal } from '../../src/workflows/messages';
import { summariseTick, tickActed, uniqueByService } from '../../src/policy/tick-summary';
import { tickWords } from '../../src/policy/run-words';
import { circuitBreaker, reconcileOnEvents, reconcileTick } from '../../src/workflows';
import { uniqueId, waitFor } from '../helpers/fixtures';
import { executeWithStubs, realTimeClient, stubWorkerEnvForFile, withStubWorker } from './helpers';

const env = stubWorkerEnvForFile();
const NOW_SEC = 1_900_000_000;
const look = (containerId: string, state: string, restartCount: number) => ({ containerId, state, restartCount, health: '' });
/** A circuit as the tick's hand-over gives it: its opening (numbered), escalation, retry time, and held by none. */
const circuit = (serviceId: string, opening: number): CircuitRef => ({
  serviceId,
  opening,
  escalation: opening,
  retryAt: NOW_SEC + 1800,
  held: false,
});

function observation(over: Partial<TickObservation> = {}): TickObservation {
  return {
    now: NOW_SEC,
    checked: 4,
    inspected: 2,
    transientErrors: 1,
    transientSamples: ['inspect c9: 500'],
    crashes: [
      {
        serviceId: 's1',
        containerId: 'c1',
        expectedLook: look('c1', 'running', 0),
        nextLook: look('c1', 'exited', 1),
        deaths: 1,
        reason: 'exited (1)',
        statusAfter: 'crashed',
        restart: false,
      },
    ],
    looks: [],
    unchanged: 1,
    backUp: [],
    gone: [{ serviceId: 's2', containerId: 'c2' }],
    databases: [],
    environmentsDown: [],
    environmentStops: [],
    splitBrain: [{ containerId: 'c7', serviceId: 's7', dbContainerId: 'c8' }],
    problems: [{ subject: 'service:s9', problem: 'unknown status "weird"' }],
    ...over,
  };
}

function applied(opened: CircuitRef[] = []): TickApplied {
  return {
    crashes: 1,
    crashedServices: 1,
    opened,
    unhealthyRestarted: 0,
    recovered: 0,
    missing: 1,
    databasesUnavailable: 0,
    databasesReady: 0,
    environmentsStopped: 0,
    containersStopped: 0,
    dockerActionErrors: 0,
  };
}

/** The tick's local activity, plus the circuit workflow's (the children run on the same worker). */
function tickStubs(
  hostId: string,
  over: { expired?: CircuitRef[]; opened?: CircuitRef[]; obs?: TickObservation; held?: HeldCircuit } = {},
) {
  const steps: string[] = [];
  const kept: Housekeeping = {
    hostId,
    failedDeploys: 2,
    failedEnvCreates: 1,
    expiredLeases: 3,
    decayed: 4,
    expiredCircuits: over.expired ?? [],
  };
  const obs = over.obs ?? observation();
  const { expiredCircuits, hostId: _h, ...housekeeping } = kept;
  const summary = summariseTick(obs, applied(over.opened), housekeeping, expiredCircuits.length);
  const circuits = uniqueByService([...(over.opened ?? []), ...expiredCircuits]);
  const stubs = {
    reconcileHost: vi.fn<Activities['reconcileHost']>(async () => {
      steps.push('reconcileHost');
      const services = [...new Set([...obs.crashes.map((c) => c.serviceId), ...circuits.map((c) => c.serviceId)])];
      return { hostId, circuits, summary, services, details: tickActed(summary) ? tickWords(summary) : undefined };
    }),
    // A circuit whose row is already closed: its workflow ends at once, so the test can wait for it.
    holdCircuit: vi.fn<Activities['holdCircuit']>(async () => over.held ?? { open: false, escalation: 0, retryAt: 0, remainingMs: 0 }),
    recoverCircuit: vi.fn<Activities['recoverCircuit']>(async () => ({ recovered: true, status: 'running' })),
  } satisfies Pick<Activities, 'reconcileHost' | 'holdCircuit' | 'recoverCircuit'>;
  return { stubs, steps };
}

describe('reconcileTick', () => {
  it('runs one local activity in one workflow task, returns its summary, and is found by the service it acted on', async () => {
    const { stubs, steps } = tickStubs(uniqueId('h'));
    const obs = observation();
    const { result, handle } = await executeWithStubs(env, stubs, reconcileTick);
    expect(steps).toEqual(['reconcileHost']);
    expect(stubs.reconcileHost.mock.calls).toEqual([[handle.workflowId]]);
    const events = (await handle.fetchHistory()).events ?? [];
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toEqual([]);
    expect(events.filter((e) => e.workflowTaskCompletedEventAttributes)).toHaveLength(1);
    expect((await handle.describe()).typedSearchAttributes.get(ServiceId)).toBe('s1');
    const expected: TickSummary = {
      dockerReachable: true,
      checked: 4,
      inspected: 2,
      transientErrors: 1,
      engineStopsHeld: 0,
      crashes: 1,
      crashedServices: 1,
      opened: 0,
      unhealthyRestarted: 0,
      recovered: 0,
      missing: 1,
      databasesUnavailable: 0,
      databasesReady: 0,
      environmentsStopped: 0,
      containersStopped: 0,
      dockerActionErrors: 0,
      circuitsExpired: 0,
      failedDeploys: 2,
      failedEnvCreates: 1,
      expiredLeases: 3,
      decayed: 4,
      splitBrain: obs.splitBrain,
      badInput: obs.problems,
    };
    expect(result).toEqual(expected);
    expect(stubs.holdCircuit).not.toHaveBeenCalled();
  });

  it('sets no search attribute on a run that changed nothing', async () => {
    const { stubs } = tickStubs(uniqueId('h'), { obs: observation({ crashes: [], gone: [] }) });
    stubs.reconcileHost.mockImplementation(async () => ({
      hostId: 'h',
      circuits: [],
      services: [],
      summary: summariseTick(
        observation({ crashes: [] }),
        { ...applied(), crashes: 0, crashedServices: 0, missing: 0 },
        { failedDeploys: 0, failedEnvCreates: 0, expiredLeases: 0, decayed: 0 },
        0,
      ),
    }));
    const { result, handle } = await executeWithStubs(env, stubs, reconcileTick);
    expect(tickActed(result)).toBe(false);
    expect((await handle.describe()).typedSearchAttributes.get(ServiceId)).toBeUndefined();
  });

  it('runs events as reconcileOnEvents: one more pass, in the same run, for a request signalled while a pass runs; no patch marker', async () => {
    const { stubs } = tickStubs(uniqueId('h'));
    let release: () => void = () => {};
    const firstPassHeld = new Promise<void>((r) => (release = r));
    const real = stubs.reconcileHost.getMockImplementation()!;
    let calls = 0;
    stubs.reconcileHost.mockImplementation(async (id) => {
      if (++calls === 1) await firstPassHeld;
      return real(id);
    });
    const client = realTimeClient(env);
    await withStubWorker(env, stubs, async (taskQueue) => {
      const handle = await client.signalWithStart(reconcileOnEvents, {
        taskQueue,
        workflowId: uniqueId('events-'),
        signal: moreEventsSignal,
        signalArgs: [],
      });
      await waitFor('the first pass to run', async () => calls === 1);
      await handle.signal(moreEventsSignal);
      await handle.signal(moreEventsSignal);
      release();
      await handle.result();
      // Born after the loop-local-activities patch: no patch marker (and so no TemporalChangeVersion upsert).
      const markers = ((await handle.fetchHistory()).events ?? []).map((e) => e.markerRecordedEventAttributes?.markerName).filter(Boolean);
      expect(markers).toContain('core_local_activity');
      expect(markers).not.toContain('core_patch');
    });
    expect(calls).toBe(2);
  });

  it('reports Docker unreachable when the observation carries an engine error', async () => {
    const { stubs } = tickStubs(uniqueId('h'), { obs: observation({ dockerError: 'connect ENOENT', checked: 0, crashes: [] }) });
    const { result } = await executeWithStubs(env, stubs, reconcileTick);
    expect(result).toMatchObject({ dockerReachable: false, checked: 0 });
  });

  it("starts one circuit workflow per opened or expired circuit, once per service, named with the host's circuit id", async () => {
    const hostId = uniqueId('h');
    const why = '3 crashes within 10s (threshold 3)';
    const { stubs } = tickStubs(hostId, { opened: [{ ...circuit('sa', 2), why }], expired: [circuit('sb', 1), circuit('sa', 2)] });
    const tickId = uniqueId('tick-');
    const children = await withStubWorker(env, stubs, async (taskQueue) => {
      const summary = await env.client.workflow.execute(reconcileTick, { taskQueue, workflowId: tickId });
      expect(summary).toMatchObject({ opened: 1, circuitsExpired: 2 });
      const handles = ['sa', 'sb'].map((sid) => env.client.workflow.getHandle<typeof circuitBreaker>(ids.circuit(hostId, sid)));
      // One at a time: the time-skipping client's result() must not overlap another's.
      for (const [i, h] of handles.entries())
        expect(await h.result()).toMatchObject({ serviceId: ['sa', 'sb'][i], closedBy: 'superseded' });
      return Promise.all(handles.map((h) => h.describe()));
    });
    expect(stubs.holdCircuit.mock.calls.map(([sid]) => sid).sort()).toEqual(['sa', 'sb']);
    for (const [i, sid] of ['sa', 'sb'].entries()) {
      expect(children[i]).toMatchObject({ type: 'circuitBreaker', parentExecution: { workflowId: tickId } });
      expect([children[i].typedSearchAttributes.get(KeeperHost), children[i].typedSearchAttributes.get(ServiceId)]).toEqual([hostId, sid]);
    }
    // Each circuit's run says why it opened, or that it was taken over, and until when.
    const retries = `retries at ${new Date((NOW_SEC + 1800) * 1000).toISOString().replace('.000Z', 'Z')}`;
    expect(await Promise.all(children.map((c) => c.staticSummary()))).toEqual([
      `sa: circuit opened (opening 2, escalation 2): ${why}; ${retries}`,
      `sb: open circuit taken over (opening 1, escalation 1): opened earlier, by ah or by keeper; ${retries}`,
    ]);
  });

  it('leaves a circuit workflow that already holds the opening alone (WorkflowExecutionAlreadyStarted) and still records', async () => {
    const hostId = uniqueId('h');
    const { stubs } = tickStubs(hostId, {
      expired: [{ ...circuit('sc', 3), held: true }],
      held: { open: true, opening: 3, escalation: 3, retryAt: NOW_SEC + 1800, remainingMs: 30 * 60_000 },
    });
    // Waited on in real time: the time-skipping client would let the server jump to the running circuit's timer.
    const client = realTimeClient(env);
    await withStubWorker(env, stubs, async (taskQueue) => {
      const running = await client.start(circuitBreaker, { taskQueue, workflowId: ids.circuit(hostId, 'sc'), args: [{ serviceId: 'sc' }] });
      await waitFor('the running circuit to hold', async () => (await running.query(circuitStateQuery)).opening === 3);
      const tick = await client.start(reconcileTick, { taskQueue, workflowId: uniqueId('tick-') });
      expect(await tick.result()).toMatchObject({ circuitsExpired: 1 });
      const now = await client.getHandle(ids.circuit(hostId, 'sc')).describe();
      expect(now).toMatchObject({ runId: running.firstExecutionRunId, status: { name: 'RUNNING' } });
      // Nothing asked of it: the opening is held.
      expect(eventsOf(await tick.fetchHistory(), 'signalExternalWorkflowExecutionInitiatedEventAttributes')).toHaveLength(0);
      await running.terminate('test over');
    });
    expect(stubs.holdCircuit).toHaveBeenCalledTimes(1);
    expect(stubs.reconcileHost).toHaveBeenCalledTimes(1);
  });

  it('asks a running circuit workflow of an older opening to look again: it continues as new to hold the new opening', async () => {
    const hostId = uniqueId('h');
    // The run holds opening 1 (4 h); ah closed it, escalation decayed, and this tick opened opening 2.
    const { stubs } = tickStubs(hostId, { opened: [{ ...circuit('sd', 2), escalation: 1 }] });
    stubs.holdCircuit
      .mockResolvedValueOnce({ open: true, opening: 1, escalation: 1, retryAt: NOW_SEC + 4 * 3600, remainingMs: 4 * 3600_000 })
      .mockResolvedValueOnce({ open: true, opening: 2, escalation: 1, retryAt: NOW_SEC + 1800, remainingMs: 30 * 60_000 });
    const client = realTimeClient(env);
    await withStubWorker(env, stubs, async (taskQueue) => {
      const running = await client.start(circuitBreaker, { taskQueue, workflowId: ids.circuit(hostId, 'sd'), args: [{ serviceId: 'sd' }] });
      // Bounds for a busy machine: the query waits for a workflow task of the shared dev server.
      await waitFor('opening 1 held', async () => (await running.query(circuitStateQuery)).opening === 1, 60_000);
      const tick = await client.start(reconcileTick, { taskQueue, workflowId: uniqueId('tick-') });
      expect(await tick.result()).toMatchObject({ opened: 1 });
      const history = await tick.fetchHistory();
      expect(eventsOf(history, 'signalExternalWorkflowExecutionInitiatedEventAttributes')).toMatchObject([
        { workflowExecution: { workflowId: ids.circuit(hostId, 'sd') }, signalName: 'recheck' },
      ]);
      const current = client.getHandle(ids.circuit(hostId, 'sd'));
      await waitFor('the continuation to hold opening 2', async () => (await current.query(circuitStateQuery)).opening === 2, 60_000);
      expect((await client.getHandle(running.workflowId, running.firstExecutionRunId).describe()).status.name).toBe('CONTINUED_AS_NEW');
      await current.terminate('test over');
    });
    expect(stubs.holdCircuit).toHaveBeenCalledTimes(2);
    expect(stubs.recoverCircuit).not.toHaveBeenCalled();
  }, 180_000);
});

/** The attributes of every event of this kind in a history. */
function eventsOf<K extends keyof temporal.api.history.v1.IHistoryEvent>(history: temporal.api.history.v1.IHistory, kind: K) {
  return (history.events ?? []).map((e) => e[kind]).filter(Boolean);
}
