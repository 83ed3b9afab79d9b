/** The circuit breaker workflow's activities: hold the open circuit's opening, then recover it once. */
import type { Recovery } from '../db/services';
import { holdCircuit, recoverCircuit } from '../host/circuit';
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
     * openings were numbered send no opening: they close the open circuit of escalation `escalation` if it is the
     * opening their hold names.
     */
    async recoverCircuit(serviceId: string, escalation: number, trigger: Recovery['trigger'], opening?: number): Promise<RecoveryResult> {
      return recoverCircuit({ ...deps, log }, { serviceId, escalation, trigger, ...(opening !== undefined ? { opening } : {}) });
    },
  };
}
