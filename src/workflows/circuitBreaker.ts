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
 * older one's timer, and an older one's recovery never closes it. A run that began before openings were numbered
 * (patch `circuit-openings`) knows no number: it alerts by its generation, recovers by its escalation and retry time,
 * and, asked to look again, holds its opening if the circuit is still open on it.
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
import type { CircuitActivities } from '../activities/circuit';
import type { CircuitInput, CircuitState, HeldCircuit } from '../contracts/circuit';
import type { NotificationEvent } from '../contracts/notification';
import { HEARTBEAT_TIMEOUT_MS } from '../contracts/timeouts';
import { ids } from '../ids';
import { circuitDetails } from '../policy/circuit-words';
import { serviceAttributes } from '../search-attributes';
import { circuitRecheckSignal, circuitResetSignal, circuitStateQuery } from './messages';
import { notifyOperators } from './notifyOperators';
import { CIRCUIT_ALERTS_PATCH, CIRCUIT_OPENINGS_PATCH } from './patches';

const { holdCircuit, holdSameOpening, recoverCircuit } = proxyActivities<CircuitActivities>({
  heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
  startToCloseTimeout: '1m',
  // The host's queue may be gone for a while (the host is down): keep trying, the timer already fired.
  retry: { initialInterval: '5s', maximumInterval: '5m', backoffCoefficient: 2 },
});

export async function circuitBreaker({ serviceId, reset }: CircuitInput): Promise<CircuitState> {
  const asked: Asked = { reset: reset === true, newest: 0 };
  let state: CircuitState = { serviceId, escalation: 0, retryAt: 0, phase: 'open' };
  // Each new state is also the run's current details, in words (no command: replay and cost are untouched).
  const enter = (next: CircuitState): CircuitState => {
    setCurrentDetails(circuitDetails(next));
    return (state = next);
  };
  listen(serviceId, asked, () => state);

  // Runs from before this patch alert by generation (their notify ids and keys): they replay as they ran.
  const byOpening = patched(CIRCUIT_OPENINGS_PATCH);
  const held = await holdCircuit(serviceId);
  const escalation = escalationOf(held);
  const which = { ...(held.opening !== undefined ? { opening: held.opening } : {}), escalation };
  if (!held.open) return enter({ ...state, ...which, phase: 'closed', closedBy: 'superseded' });
  // Runs from before this patch neither set the memo nor alert: they replay as they ran.
  const alerts = patched(CIRCUIT_ALERTS_PATCH);
  enter({ serviceId, ...which, retryAt: held.retryAt, phase: 'open', ...(alerts ? { deaths: held.deaths ?? [] } : {}) });
  const alert = alerter(held, serviceId, byOpening);
  if (alerts) {
    upsertMemo({ deaths: state.deaths, retryAt: held.retryAt });
    await alert({ kind: 'circuit-opened', retryAt: held.retryAt, deaths: held.deaths ?? [] });
  }

  const waited = await waitForRetry(serviceId, held, asked, (opening) => enter({ ...state, opening }));
  if (waited.superseded) return holdTheNewerOpening(enter, state, asked.reset);
  enter({ ...state, phase: 'recovering' });
  // The opening, or, for a run from before openings that has none, its escalation and retry time.
  const { opening } = waited;
  const trigger = waited.byReset ? 'manual_reset' : 'auto_recovery';
  const result = await recoverCircuit(serviceId, escalation, trigger, ...(opening !== undefined ? [opening] : [undefined, held.retryAt]));
  if (!result.recovered && result.reopened) return holdTheNewerOpening(enter, state, waited.byReset);
  const closedBy = result.recovered ? (waited.byReset ? 'reset' : 'timer') : 'superseded';
  enter({ ...state, phase: 'closed', closedBy, ...(result.status ? { status: result.status } : {}) });
  if (alerts && closedBy !== 'superseded') {
    await alert(
      result.error ? { kind: 'recovery-failed', error: result.error } : { kind: 'circuit-closed', closedBy, status: result.status },
    );
  }
  return state;
}

/** The held opening's escalation; `generation` is its name in results recorded before openings were numbered. */
const escalationOf = (held: HeldCircuit): number => held.escalation ?? held.generation ?? 0;

/** What the run's signals asked: an operator's reset, and the newest opening a tick asked it to hold (recheck). */
interface Asked {
  reset: boolean;
  newest: number;
}

/** The run's signals and its state query. */
function listen(serviceId: string, asked: Asked, state: () => CircuitState): void {
  // The reason is optional; any other payload (a number, an object) is not a reset anyone meant: logged, ignored.
  setHandler(circuitResetSignal, (reason?: unknown) => {
    if (reason === undefined || reason === null || typeof reason === 'string') asked.reset = true;
    else {
      const payloadType = Array.isArray(reason) ? 'array' : typeof reason;
      log.warn('circuit reset signal ignored: its payload is not a reason string', { serviceId, payloadType });
    }
  });
  setHandler(circuitRecheckSignal, (opening?: unknown) => {
    if (Number.isSafeInteger(opening) && (opening as number) > 0) asked.newest = Math.max(asked.newest, opening as number);
    else log.warn('circuit recheck signal ignored: its payload is not an opening number', { serviceId, payloadType: typeof opening });
  });
  setHandler(circuitStateQuery, state);
}

/**
 * Waits for the retry time (a durable timer), an operator's reset, or a tick asking the run to hold a newer opening
 * than its own (superseded). A run from before openings knows no number of its own: asked, it holds the open
 * circuit's opening if that is still the one it began holding, learns its number (`learned`), and waits on.
 */
async function waitForRetry(
  serviceId: string,
  held: HeldCircuit,
  asked: Asked,
  learned: (opening: number) => void,
): Promise<{ byReset: boolean; superseded: boolean; opening?: number }> {
  let opening = held.opening;
  const asking = () => asked.newest > (opening ?? 0);
  const superseded = async (): Promise<boolean> => {
    if (!asking()) return false;
    if (opening !== undefined) return true;
    opening = await holdSameOpening(serviceId, escalationOf(held), held.retryAt);
    if (opening !== undefined) learned(opening);
    return opening === undefined || asking();
  };
  if (held.remainingMs <= 0) return { byReset: asked.reset, superseded: await superseded(), opening };
  const deadline = Date.now() + held.remainingMs;
  for (let left = held.remainingMs; left > 0; left = deadline - Date.now()) {
    if (!(await condition(() => asked.reset || asking(), left))) break; // its timer
    if (asked.reset) return { byReset: true, superseded: false, opening };
    if (await superseded()) return { byReset: false, superseded: true, opening };
  }
  return { byReset: false, superseded: false, opening };
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
  const escalation = escalationOf(held);
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
