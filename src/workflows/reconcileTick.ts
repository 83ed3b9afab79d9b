/**
 * One reconcile tick, started by this host's `reconcile` schedule: DB-only housekeeping, then observe, then act,
 * then one circuit breaker workflow per circuit that opened or expired. Returns (and records) a compact summary.
 * Every step is an idempotent activity; the history has a fixed number of events plus one per circuit started.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { ParentClosePolicy, proxyActivities, startChild, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CircuitRef, Housekeeping, TickApplied, TickObservation, TickSummary } from '../contracts/reconcile';
import { HEARTBEAT_TIMEOUT_MS } from '../contracts/timeouts';
import { ids } from '../ids';
import { serviceAttributes } from '../search-attributes';
import { circuitBreaker } from './circuitBreaker';

const { housekeep, observeHost, applyObservation, recordTickResult } = proxyActivities<Activities>({
  heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
  startToCloseTimeout: '2m',
  scheduleToCloseTimeout: '5m',
  retry: { initialInterval: '1s', maximumAttempts: 5 },
});

export async function reconcileTick(): Promise<TickSummary> {
  const housekept = await housekeep();
  const obs = await observeHost();
  const applied = await applyObservation(obs);
  const circuits = uniqueByService([...applied.opened, ...housekept.expiredCircuits]);
  for (const c of circuits) await startCircuitBreaker(housekept.hostId, c);
  const { expiredCircuits, hostId: _host, ...housekeeping } = housekept;
  const summary = summarise(obs, applied, housekeeping, expiredCircuits.length);
  await recordTickResult(summary, workflowInfo().workflowId);
  return summary;
}

/** Starts the circuit's workflow, which outlives this tick. One already running for it keeps its timer. */
async function startCircuitBreaker(host: string, c: CircuitRef): Promise<void> {
  try {
    await startChild(circuitBreaker, {
      workflowId: ids.circuit(host, c.serviceId),
      args: [{ serviceId: c.serviceId }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      typedSearchAttributes: serviceAttributes(host, c.serviceId),
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

function uniqueByService(refs: CircuitRef[]): CircuitRef[] {
  return [...new Map(refs.map((r) => [r.serviceId, r])).values()];
}

function summarise(
  obs: TickObservation,
  applied: TickApplied,
  housekeeping: Omit<Housekeeping, 'expiredCircuits' | 'hostId'>,
  circuitsExpired: number,
): TickSummary {
  const { opened, ...rest } = applied;
  return {
    dockerReachable: !obs.dockerError,
    checked: obs.checked,
    inspected: obs.inspected,
    transientErrors: obs.transientErrors,
    engineStopsHeld: obs.engineStopsHeld ?? 0,
    ...rest,
    opened: opened.length,
    circuitsExpired,
    ...housekeeping,
    splitBrain: obs.splitBrain,
    badInput: obs.problems,
  };
}
