/**
 * The reconcile passes that both reconcile workflows run: one local activity observes and applies, so the
 * per-service observation stays in the worker and only the summary enters the history; then one circuit
 * breaker workflow per circuit that opened or expired. Deterministic: workflow code only.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  getExternalWorkflowHandle,
  log,
  ParentClosePolicy,
  patched,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { ReconcileActivities } from '../activities/reconcile';
import type { CircuitRef, TickSummary } from '../contracts/reconcile';
import { circuitSummary } from '../policy/circuit-words';
import { ids } from '../ids';
import { serviceAttributes, ServiceId } from '../search-attributes';
import { circuitBreaker } from './circuitBreaker';
import { circuitRecheckSignal, moreEventsSignal } from './messages';
import { CIRCUIT_OPENINGS_PATCH } from './patches';

const { reconcileHost } = proxyLocalActivities<ReconcileActivities>({
  startToCloseTimeout: '2m',
  scheduleToCloseTimeout: '5m',
  retry: { initialInterval: '1s', maximumAttempts: 5 },
});

/** A run looks again at most this many times, then ends; the next request starts a new run. */
const MAX_EVENT_PASSES = 20;

/**
 * One pass, then one more for each burst of requests (the watcher's signals) that arrived while the last pass
 * ran, all in the same run.
 */
export async function passWhileRequested(): Promise<TickSummary> {
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

/**
 * Starts the circuit's workflow, which outlives the run that opened it. One already running for it keeps its timer;
 * if it holds an older opening (ah closed that one, and this one opened since), it is asked to look again, and
 * continues as new to hold this one.
 */
export async function startCircuitBreaker(host: string, c: CircuitRef): Promise<void> {
  try {
    await startChild(circuitBreaker, {
      workflowId: ids.circuit(host, c.serviceId),
      args: [{ serviceId: c.serviceId }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      typedSearchAttributes: serviceAttributes(host, c.serviceId),
      // Shown on the circuit's page and in the runs list's summary: why it opened, and until when.
      staticSummary: circuitSummary(c),
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    // Ticks from before this patch left the running one alone: they replay as they ran.
    if (c.opening !== undefined && c.held === false && patched(CIRCUIT_OPENINGS_PATCH)) await askToRecheck(host, c.serviceId, c.opening);
  }
}

/** Signals the circuit's running workflow that `opening` is open and held by none. */
async function askToRecheck(host: string, serviceId: string, opening: number): Promise<void> {
  try {
    await getExternalWorkflowHandle(ids.circuit(host, serviceId)).signal(circuitRecheckSignal, opening);
  } catch (err) {
    // It ended between the start and the signal: the opening is still held by none, and the look requests a tick
    // that starts its workflow.
    log.warn('circuit recheck not delivered: its workflow ended', { serviceId, opening, error: String(err) });
  }
}
