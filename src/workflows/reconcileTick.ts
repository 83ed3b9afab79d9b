/**
 * One reconcile tick, started by this host's `reconcile` schedule: DB-only housekeeping, then observe, then act,
 * then one circuit breaker workflow per circuit that opened or expired. Returns (and records) a compact summary.
 * Every step is an idempotent activity; the history has a fixed number of events plus one per circuit started.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ParentClosePolicy,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CircuitRef, TickSummary } from '../contracts/reconcile';
import { HEARTBEAT_TIMEOUT_MS } from '../contracts/timeouts';
import { ids } from '../ids';
import { summariseTick, uniqueByService } from '../policy/tick-summary';
import { serviceAttributes, ServiceId } from '../search-attributes';
import { circuitBreaker } from './circuitBreaker';
import { moreEventsSignal } from './messages';
import { LOCAL_LOOPS_PATCH } from './patches';

const { housekeep, observeHost, applyObservation, recordTickResult } = proxyActivities<Activities>({
  heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
  startToCloseTimeout: '2m',
  scheduleToCloseTimeout: '5m',
  retry: { initialInterval: '1s', maximumAttempts: 5 },
});

const { reconcileHost } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '2m',
  scheduleToCloseTimeout: '5m',
  retry: { initialInterval: '1s', maximumAttempts: 5 },
});

/** An event tick looks again at most this many times, then ends; the next request starts a new run. */
const MAX_EVENT_PASSES = 20;

export async function reconcileTick(): Promise<TickSummary> {
  // Patched: a tick that started on a worker with remote activities replays with them.
  if (patched(LOCAL_LOOPS_PATCH)) return reconcileLocally();
  const housekept = await housekeep();
  const obs = await observeHost();
  const applied = await applyObservation(obs);
  const circuits = uniqueByService([...applied.opened, ...housekept.expiredCircuits]);
  for (const c of circuits) await startCircuitBreaker(housekept.hostId, c);
  const { expiredCircuits, hostId: _host, ...housekeeping } = housekept;
  const summary = summariseTick(obs, applied, housekeeping, expiredCircuits.length);
  await recordTickResult(summary, workflowInfo().workflowId);
  return summary;
}

/**
 * One tick in one workflow task: a single local activity observes and applies, so the per-service observation
 * stays in the worker and only the summary enters the history. Requests that arrive while it runs (the watcher's
 * start after a die) make one more pass, in the same run.
 */
async function reconcileLocally(): Promise<TickSummary> {
  let requested = 0;
  setHandler(moreEventsSignal, () => void requested++);
  let handled = 0;
  let summary: TickSummary;
  let passes = 0;
  do {
    const target = Math.max(requested, 1);
    summary = await reconcilePass();
    handled = target;
    passes++;
  } while (requested > handled && passes < MAX_EVENT_PASSES);
  return summary;
}

async function reconcilePass(): Promise<TickSummary> {
  const { hostId, circuits, summary, services, details } = await reconcileHost(workflowInfo().workflowId);
  for (const c of circuits) await startCircuitBreaker(hostId, c);
  if (details) {
    setCurrentDetails(details);
    const known = workflowInfo().typedSearchAttributes.get(ServiceId);
    if (!known && services.length > 0) upsertSearchAttributes([{ key: ServiceId, value: services[0] }]);
  }
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
