/**
 * One open circuit: a durable timer to its retry time, or an operator's `reset` signal, whichever comes first,
 * then one idempotent recovery (a compare-and-set on the circuit's generation). Query `state` at any time.
 * Started by the reconcile tick (parent-close ABANDON) or by `keeper circuit reset` through signal-with-start.
 */
import { condition, log, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { HEARTBEAT_TIMEOUT_MS } from './timeouts';
import { circuitResetSignal, circuitStateQuery, type CircuitInput, type CircuitState } from './messages';

const { holdCircuit, recoverCircuit } = proxyActivities<Activities>({
  heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
  startToCloseTimeout: '1m',
  // The host's queue may be gone for a while (the host is down): keep trying, the timer already fired.
  retry: { initialInterval: '5s', maximumInterval: '5m', backoffCoefficient: 2 },
});

export async function circuitBreaker({ serviceId }: CircuitInput): Promise<CircuitState> {
  let resetRequested = false;
  let state: CircuitState = { serviceId, generation: 0, retryAt: 0, phase: 'open' };
  // The reason is optional; any other payload (a number, an object) is not a reset anyone meant: logged, ignored.
  setHandler(circuitResetSignal, (reason?: unknown) => {
    if (reason !== undefined && reason !== null && typeof reason !== 'string') {
      log.warn('circuit reset signal ignored: its payload is not a reason string', { serviceId, payloadType: Array.isArray(reason) ? 'array' : typeof reason });
      return;
    }
    resetRequested = true;
  });
  setHandler(circuitStateQuery, () => state);

  const held = await holdCircuit(serviceId);
  if (!held.open) return (state = { ...state, generation: held.generation, phase: 'closed', closedBy: 'superseded' });
  state = { serviceId, generation: held.generation, retryAt: held.retryAt, phase: 'open' };

  const byReset = held.remainingMs > 0 ? await condition(() => resetRequested, held.remainingMs) : resetRequested;
  state = { ...state, phase: 'recovering' };
  const result = await recoverCircuit(serviceId, held.generation, byReset ? 'manual_reset' : 'auto_recovery');
  state = {
    ...state,
    phase: 'closed',
    closedBy: result.recovered ? (byReset ? 'reset' : 'timer') : 'superseded',
    ...(result.status ? { status: result.status } : {}),
  };
  return state;
}
