/**
 * An open circuit keeps its container stopped (and kept, for its logs). The stop at the opening can fail (an engine
 * error, a timeout) and someone can start the container by hand: a tick that finds it running stops it again, and
 * so does every later one until it is down, before its retry time. Pure over the tick's container list: no extra
 * engine call.
 */
import type { TickObservation } from '../../contracts/reconcile';
import type { ServiceRow } from '../../db/services';
import { isValidContainerId, serviceRowProblem } from '../../policy/rows';
import type { Listed } from './inspector';

const UP_STATES = new Set(['running', 'restarting', 'paused']);

export function findOpenCircuitsRunning(services: ServiceRow[], listed: Listed, obs: TickObservation): void {
  for (const s of services) {
    if (s.circuitOpen !== 1 || serviceRowProblem(s) || !isValidContainerId(s.containerId)) continue;
    // From its retry time on, the circuit's recovery starts the container: not a container to stop.
    if (typeof s.circuitRetryAt === 'number' && obs.now >= s.circuitRetryAt) continue;
    const c = listed.find(s.containerId);
    if (c && UP_STATES.has(c.state)) (obs.openCircuitsRunning ??= []).push({ serviceId: s.id, containerId: s.containerId });
  }
}
