/** The circuit breaker workflow's activities: hold the open circuit, then recover it once. */
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

    /** Closes generation `generation` of the circuit; any number of calls recover it at most once. */
    async recoverCircuit(serviceId: string, generation: number, trigger: Recovery['trigger']): Promise<RecoveryResult> {
      return recoverCircuit({ ...deps, log }, serviceId, generation, trigger);
    },
  };
}
