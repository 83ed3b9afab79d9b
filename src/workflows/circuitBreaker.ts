/**
 * One open circuit: a durable timer to its retry time, or an operator's `reset` signal, whichever comes first,
 * then one idempotent recovery (a compare-and-set on the circuit's generation). Query `state` at any time.
 * Started by the reconcile tick (parent-close ABANDON) or by `keeper circuit reset` through signal-with-start.
 * Its memo and result carry the deaths that opened it (the UI's "why"), and each of its events (opened, closed,
 * recovery failed) is an alert to the host's webhooks, delivered by a notifyOperators workflow of its own.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  condition,
  log,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  startChild,
  upsertMemo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CircuitInput, CircuitState, HeldCircuit } from '../contracts/circuit';
import type { NotificationEvent } from '../contracts/notification';
import { HEARTBEAT_TIMEOUT_MS } from '../contracts/timeouts';
import { ids } from '../ids';
import { circuitDetails } from '../policy/circuit-words';
import { serviceAttributes } from '../search-attributes';
import { circuitResetSignal, circuitStateQuery } from './messages';
import { notifyOperators } from './notifyOperators';
import { CIRCUIT_ALERTS_PATCH } from './patches';

const { holdCircuit, recoverCircuit } = proxyActivities<Activities>({
  heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
  startToCloseTimeout: '1m',
  // The host's queue may be gone for a while (the host is down): keep trying, the timer already fired.
  retry: { initialInterval: '5s', maximumInterval: '5m', backoffCoefficient: 2 },
});

export async function circuitBreaker({ serviceId }: CircuitInput): Promise<CircuitState> {
  let resetRequested = false;
  let state: CircuitState = { serviceId, generation: 0, retryAt: 0, phase: 'open' };
  // Each new state is also the run's current details, in words (no command: replay and cost are untouched).
  const enter = (next: CircuitState): CircuitState => {
    setCurrentDetails(circuitDetails(next));
    return (state = next);
  };
  // The reason is optional; any other payload (a number, an object) is not a reset anyone meant: logged, ignored.
  setHandler(circuitResetSignal, (reason?: unknown) => {
    if (reason !== undefined && reason !== null && typeof reason !== 'string') {
      log.warn('circuit reset signal ignored: its payload is not a reason string', {
        serviceId,
        payloadType: Array.isArray(reason) ? 'array' : typeof reason,
      });
      return;
    }
    resetRequested = true;
  });
  setHandler(circuitStateQuery, () => state);

  const held = await holdCircuit(serviceId);
  if (!held.open) return enter({ ...state, generation: held.generation, phase: 'closed', closedBy: 'superseded' });
  // Runs from before this patch neither set the memo nor alert: they replay as they ran.
  const alerts = patched(CIRCUIT_ALERTS_PATCH);
  enter({
    serviceId,
    generation: held.generation,
    retryAt: held.retryAt,
    phase: 'open',
    ...(alerts ? { deaths: held.deaths ?? [] } : {}),
  });
  if (alerts) {
    upsertMemo({ deaths: state.deaths, retryAt: held.retryAt });
    await alert(held, serviceId, { kind: 'circuit-opened', retryAt: held.retryAt, deaths: held.deaths ?? [] });
  }

  const byReset = held.remainingMs > 0 ? await condition(() => resetRequested, held.remainingMs) : resetRequested;
  enter({ ...state, phase: 'recovering' });
  const result = await recoverCircuit(serviceId, held.generation, byReset ? 'manual_reset' : 'auto_recovery');
  const closedBy = result.recovered ? (byReset ? 'reset' : 'timer') : 'superseded';
  enter({ ...state, phase: 'closed', closedBy, ...(result.status ? { status: result.status } : {}) });
  if (alerts && closedBy !== 'superseded') {
    await alert(
      held,
      serviceId,
      result.error ? { kind: 'recovery-failed', error: result.error } : { kind: 'circuit-closed', closedBy, status: result.status },
    );
  }
  return state;
}

/** Starts the event's alert, which outlives this workflow; a host without webhooks has none to send. */
async function alert(
  held: HeldCircuit,
  serviceId: string,
  what: Omit<NotificationEvent, 'hostId' | 'serviceId' | 'generation' | 'atMs'>,
): Promise<void> {
  if (!held.alerts || !held.hostId) return;
  const event: NotificationEvent = { ...what, hostId: held.hostId, serviceId, generation: held.generation, atMs: Date.now() };
  try {
    await startChild(notifyOperators, {
      workflowId: ids.notify(held.hostId, serviceId, held.generation, event.kind),
      args: [event],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      typedSearchAttributes: serviceAttributes(held.hostId, serviceId),
    });
  } catch (err) {
    // Already sent for this generation (a circuit workflow started again by a reset): the receiver has it.
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}
