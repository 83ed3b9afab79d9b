/**
 * A reconcile tick's compact summary, pure: built from the observation and what was applied, whatever the number
 * of services. Also whether a run acted at all, and the one line an operator reads for it in the Temporal UI.
 */
import type { GcSweepResult } from '../contracts/gc';
import type { PoolRefillResult } from '../contracts/pool';
import type { CircuitRef, Housekeeping, TickApplied, TickObservation, TickSummary } from '../contracts/reconcile';

export function summariseTick(
  obs: TickObservation,
  applied: TickApplied,
  housekeeping: Omit<Housekeeping, 'expiredCircuits' | 'hostId'>,
  circuitsExpired: number,
): TickSummary {
  const { opened, ...rest } = applied;
  return {
    dockerReachable: !obs.dockerError,
    checked: obs.checked,
    inspected: obs.inspected,
    transientErrors: obs.transientErrors,
    engineStopsHeld: obs.engineStopsHeld ?? 0,
    ...(obs.deathsHeld ? { deathsHeld: obs.deathsHeld } : {}),
    ...rest,
    opened: opened.length,
    circuitsExpired,
    ...housekeeping,
    splitBrain: obs.splitBrain,
    badInput: obs.problems,
  };
}

/** One ref per service, the first given: callers list the circuits this tick opened (with their why) first. */
export function uniqueByService(refs: CircuitRef[]): CircuitRef[] {
  const first = new Map<string, CircuitRef>();
  for (const r of refs) if (!first.has(r.serviceId)) first.set(r.serviceId, r);
  return [...first.values()];
}

/** A tick that changed something: counted a crash, opened or expired a circuit, moved a row or a container. */
export function tickActed(t: TickSummary): boolean {
  const changes = [
    t.crashes,
    t.opened,
    t.circuitsExpired,
    t.recovered,
    t.unhealthyRestarted,
    t.missing,
    t.databasesUnavailable,
    t.databasesReady,
    t.environmentsStopped,
    t.containersStopped,
    t.failedDeploys,
    t.failedEnvCreates,
    t.expiredLeases,
    t.oomConfirmed,
  ];
  return changes.some((n) => (n ?? 0) > 0);
}

/** A sweep that removed, or failed to remove, something. */
export function sweepActed(r: Pick<GcSweepResult, 'totals'>): boolean {
  return r.totals.removed + r.totals.failed > 0;
}

/** A refill that created, pruned or detached something, or could not. */
export function refillActed(r: PoolRefillResult): boolean {
  const p = r.prune;
  const pruned = p.pruned.length + (p.replaced?.length ?? 0) + p.finishedClaims;
  const detached = (r.detach?.detached.length ?? 0) + (r.detach?.failed.length ?? 0);
  return r.created.length + r.failed.length + pruned + detached > 0 || r.blocked;
}
