/**
 * One opening of a circuit: a durable timer to its retry time, or an operator's `reset` signal, whichever comes
 * first, then one idempotent recovery (a compare-and-set on the opening). Query `state` at any time. Started by the
 * reconcile tick (parent-close ABANDON) or by `keeper circuit reset` through signal-with-start. Its memo and result
 * carry the deaths that opened it (the UI's "why"), and each of its events (opened, closed, recovery failed) is an
 * alert to the host's webhooks, delivered by a notifyOperators workflow of its own, keyed by the opening.
 *
 * The workflow id is the circuit's, not the opening's: a run can outlive its opening (ah closed it, and the circuit
 * opened again since). Such a run continues as new to hold the newer opening when the tick asks it to look again
 * (`recheck`), or when its recovery finds the circuit open on a newer opening, so a new opening never waits for an
 * older one's timer, and an older one's recovery never closes it.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  condition,
  continueAsNew,
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
import { circuitRecheckSignal, circuitResetSignal, circuitStateQuery } from './messages';
import { notifyOperators } from './notifyOperators';
import { CIRCUIT_ALERTS_PATCH, CIRCUIT_OPENINGS_PATCH } from './patches';

const { holdCircuit, recoverCircuit } = proxyActivities<Activities>({
  heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
  startToCloseTimeout: '1m',
  // The host's queue may be gone for a while (the host is down): keep trying, the timer already fired.
  retry: { initialInterval: '5s', maximumInterval: '5m', backoffCoefficient: 2 },
});

export async function circuitBreaker({ serviceId, reset }: CircuitInput): Promise<CircuitState> {
  let resetRequested = reset === true;
  // The newest opening a tick asked this run to hold (recheck): one newer than its own supersedes it.
  let newestAsked = 0;
  let state: CircuitState = { serviceId, escalation: 0, retryAt: 0, phase: 'open' };
  // Each new state is also the run's current details, in words (no command: replay and cost are untouched).
  const enter = (next: CircuitState): CircuitState => {
    setCurrentDetails(circuitDetails(next));
    return (state = next);
  };
  setHandler(circuitResetSignal, (reason?: unknown) => {
    if (isReason(reason, serviceId)) resetRequested = true;
  });
  setHandler(circuitRecheckSignal, (opening?: unknown) => {
    if (Number.isSafeInteger(opening) && (opening as number) > 0) newestAsked = Math.max(newestAsked, opening as number);
    else log.warn('circuit recheck signal ignored: its payload is not an opening number', { serviceId, payloadType: typeof opening });
  });
  setHandler(circuitStateQuery, () => state);

  // Runs from before this patch alert by generation (their notify ids and keys): they replay as they ran.
  const byOpening = patched(CIRCUIT_OPENINGS_PATCH);
  const held = await holdCircuit(serviceId);
  const which = { ...(held.opening !== undefined ? { opening: held.opening } : {}), escalation: held.escalation ?? held.generation ?? 0 };
  if (!held.open) return enter({ ...state, ...which, phase: 'closed', closedBy: 'superseded' });
  // Runs from before this patch neither set the memo nor alert: they replay as they ran.
  const alerts = patched(CIRCUIT_ALERTS_PATCH);
  enter({ serviceId, ...which, retryAt: held.retryAt, phase: 'open', ...(alerts ? { deaths: held.deaths ?? [] } : {}) });
  const alert = alerter(held, serviceId, byOpening);
  if (alerts) {
    upsertMemo({ deaths: state.deaths, retryAt: held.retryAt });
    await alert({ kind: 'circuit-opened', retryAt: held.retryAt, deaths: held.deaths ?? [] });
  }

  const superseded = () => newestAsked > (held.opening ?? 0);
  const woke = held.remainingMs > 0 && (await condition(() => resetRequested || superseded(), held.remainingMs));
  if (superseded()) return holdTheNewerOpening(enter, state, resetRequested);
  const byReset = held.remainingMs > 0 ? woke && resetRequested : resetRequested;
  enter({ ...state, phase: 'recovering' });
  const result = await recoverCircuit(serviceId, which.escalation, byReset ? 'manual_reset' : 'auto_recovery', held.opening);
  if (!result.recovered && result.reopened) return holdTheNewerOpening(enter, state, byReset);
  const closedBy = result.recovered ? (byReset ? 'reset' : 'timer') : 'superseded';
  enter({ ...state, phase: 'closed', closedBy, ...(result.status ? { status: result.status } : {}) });
  if (alerts && closedBy !== 'superseded') {
    await alert(
      result.error ? { kind: 'recovery-failed', error: result.error } : { kind: 'circuit-closed', closedBy, status: result.status },
    );
  }
  return state;
}

/** The reason is optional; any other payload (a number, an object) is not a reset anyone meant: logged, ignored. */
function isReason(reason: unknown, serviceId: string): boolean {
  if (reason === undefined || reason === null || typeof reason === 'string') return true;
  log.warn('circuit reset signal ignored: its payload is not a reason string', {
    serviceId,
    payloadType: Array.isArray(reason) ? 'array' : typeof reason,
  });
  return false;
}

/**
 * This run's opening is over and the circuit is open on a newer one: a run of the same workflow id holds that one
 * (its own hold, alerts and timer), taking an operator's reset along.
 */
async function holdTheNewerOpening(enter: (s: CircuitState) => CircuitState, state: CircuitState, reset: boolean): Promise<never> {
  enter({ ...state, phase: 'closed', closedBy: 'superseded' });
  return continueAsNew<typeof circuitBreaker>({ serviceId: state.serviceId, ...(reset ? { reset: true } : {}) });
}

type AlertWhat = Omit<NotificationEvent, 'hostId' | 'serviceId' | 'opening' | 'escalation' | 'generation' | 'atMs'>;

/**
 * Starts an event's alert, which outlives this workflow; a host without webhooks has none to send. By the opening
 * (its key and notify workflow id), or, for a run from before the openings patch, by its generation as it began.
 */
function alerter(held: HeldCircuit, serviceId: string, byOpening: boolean): (what: AlertWhat) => Promise<void> {
  const escalation = held.escalation ?? held.generation ?? 0;
  const numbered = byOpening && held.opening !== undefined;
  return async (what) => {
    if (!held.alerts || !held.hostId) return;
    const which = numbered ? { opening: held.opening as number, escalation } : { generation: escalation };
    const event: NotificationEvent = { ...what, hostId: held.hostId, serviceId, ...which, atMs: Date.now() };
    const workflowId = numbered
      ? ids.notify(held.hostId, serviceId, held.opening as number, event.kind)
      : ids.notifyByGeneration(held.hostId, serviceId, escalation, event.kind);
    try {
      await startChild(notifyOperators, {
        workflowId,
        args: [event],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        typedSearchAttributes: serviceAttributes(held.hostId, serviceId),
      });
    } catch (err) {
      // Already sent for this opening (a circuit workflow started again by a reset): the receiver has it.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  };
}
