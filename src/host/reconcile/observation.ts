/** What one reconcile tick saw: the observe step's result, which the apply step acts on. */
import type { TickObservation } from '../../contracts/reconcile';

export function emptyObservation(now: number): TickObservation {
  return {
    now,
    checked: 0,
    inspected: 0,
    transientErrors: 0,
    transientSamples: [],
    crashes: [],
    looks: [],
    unchanged: 0,
    backUp: [],
    gone: [],
    vanished: [],
    databases: [],
    environmentsDown: [],
    environmentStops: [],
    openCircuitsRunning: [],
    splitBrain: [],
    problems: [],
  };
}
