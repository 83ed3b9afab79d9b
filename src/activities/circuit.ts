/** The circuit breaker workflow's activities: hold the open circuit's opening, then recover it once. */
import { Context } from '@temporalio/activity';
import type { Recovery } from '../db/services';
import { holdCircuit, holdSameOpening, recoverCircuit } from '../host/circuit';
import type { HeldCircuit, RecoveryResult } from '../contracts/circuit';
import type { HostDeps } from '../host/deps';

export function createCircuitActivities(deps: HostDeps) {
  const log = deps.log.child({ loop: 'circuit' });
  return {
    async holdCircuit(serviceId: string): Promise<HeldCircuit> {
      return holdCircuit(deps, serviceId);
    },

    /**
     * Closes the circuit's opening `opening`; any number of calls recover it at most once. Runs that began before
     * openings were numbered send no opening: they close the open circuit that has their escalation and `retryAt` (an
     * attempt scheduled before the upgrade sends neither: the opening its hold names).
     */
    async recoverCircuit(
      serviceId: string,
      escalation: number,
      trigger: Recovery['trigger'],
      opening?: number,
      retryAt?: number,
    ): Promise<RecoveryResult> {
      const which = { ...(opening !== undefined ? { opening } : {}), ...(retryAt !== undefined ? { retryAt } : {}) };
      // The first attempt's time: a retry that finds the container running may have started it then (S7).
      return recoverCircuit({ ...deps, log }, { serviceId, escalation, trigger, ...which }, firstAttemptAtSec());
    },

    /** A run from before openings, asked to recheck: holds its opening if the circuit is still open on it (see host). */
    async holdSameOpening(serviceId: string, escalation: number, retryAt: number): Promise<number | undefined> {
      return holdSameOpening(deps, { serviceId, escalation, retryAt });
    },
  };
}

/** When this activity's first attempt was scheduled (unix seconds); undefined outside an activity (a direct call). */
function firstAttemptAtSec(): number | undefined {
  try {
    return Math.floor(Context.current().info.scheduledTimestampMs / 1000);
  } catch {
    return undefined;
  }
}

/** What the workflows proxy (`proxyActivities<CircuitActivities>`): the types only. */
export type CircuitActivities = ReturnType<typeof createCircuitActivities>;
