/**
 * The tick's act step: what the observation found, applied with compare-and-set writes, so a retried activity
 * or a racing ah API call never counts twice. Docker actions (stop a container whose circuit opened, restart an
 * unhealthy one, stop an expired lease's container) that fail transiently are counted and retried next tick.
 */
import { whenWritable } from '../../db/busy';
import { DockerError } from '../../docker/errors';
import { confirmOomKill } from '../../db/crash-records';
import { reportProblemOnce, setDatabaseStatus, stopEnvironment } from '../../db/hosted';
import { swapSnapshot } from '../../db/container-snapshots';
import { markServiceRunning, markServiceStopped, readCircuit, stopVanishedService, recordCrash } from '../../db/services';
import type { CircuitRef, CrashPolicy, TickApplied, TickObservation } from '../../contracts/reconcile';
import { unixSeconds } from '../../time';
import type { HostDeps } from '../deps';
import { readLogTails } from './log-tails';
import { openingWhy } from '../../policy/circuit-words';

type ApplyDeps = Pick<HostDeps, 'db' | 'docker' | 'log' | 'clock' | 'metrics'>;

export async function applyObservation(deps: ApplyDeps, policy: CrashPolicy, obs: TickObservation): Promise<TickApplied> {
  const now = unixSeconds(deps.clock);
  const applied: TickApplied = {
    crashes: 0,
    crashedServices: 0,
    opened: [],
    unhealthyRestarted: 0,
    recovered: 0,
    missing: 0,
    databasesUnavailable: 0,
    databasesReady: 0,
    environmentsStopped: 0,
    containersStopped: 0,
    dockerActionErrors: 0,
  };
  const act = dockerAction(deps, applied);
  await applyCrashes(deps, policy, obs, applied, act, now);
  // Compare-and-set writes: run again for the lock, each finds what the first run applied done, and counts it no more.
  await whenWritable('the row changes', () => applyRowChanges(deps, obs, applied, now));
  for (const e of obs.environmentStops) {
    if (await act(`stop environment ${e.id}`, () => deps.docker.stopContainer(e.containerId))) applied.containersStopped++;
  }
  for (const c of obs.openCircuitsRunning ?? []) {
    if (!stillHeldDown(deps, c, now)) continue;
    if (await act(`stop ${c.containerId.slice(0, 12)} (its circuit is open)`, () => deps.docker.stopContainer(c.containerId)))
      applied.containersStopped++;
  }
  await whenWritable('the problems reported', () => reportOnce(deps, obs, now));
  return applied;
}

/**
 * Whether an open circuit's running container is still to be stopped, read again just before the stop: the
 * observation read the row before it listed the engine, and a recovery in between may have started the container
 * and closed the circuit (S4 in RELIABILITY.md). From its retry time on, the recovery may be starting it: it is left
 * to the recovery.
 */
function stillHeldDown({ db }: ApplyDeps, c: { serviceId: string; containerId: string }, now: number): boolean {
  const circuit = readCircuit(db, c.serviceId);
  return !!circuit?.open && circuit.containerId === c.containerId && circuit.retryAt !== null && now < circuit.retryAt;
}

/** Runs a Docker action; a 404 counts as done, any other engine error is counted and left for the next tick. */
function dockerAction({ log }: ApplyDeps, applied: TickApplied) {
  return async (what: string, fn: () => Promise<void>): Promise<boolean> => {
    try {
      await fn();
      return true;
    } catch (err) {
      if (!(err instanceof DockerError)) throw err;
      if (err.isNotFound) return true;
      applied.dockerActionErrors++;
      log.warn(`${what} failed; retried later`, { error: err.message });
      return false;
    }
  };
}

async function applyCrashes(
  deps: ApplyDeps,
  policy: CrashPolicy,
  obs: TickObservation,
  applied: TickApplied,
  act: ReturnType<typeof dockerAction>,
  now: number,
): Promise<void> {
  const { db, docker, log, metrics } = deps;
  for (const c of obs.crashes) {
    const tails = await readLogTails(deps, c);
    // One transaction, a compare-and-set on the snapshot: run again for the lock, it counts the crash once.
    const outcome = await whenWritable(`the crash of ${c.serviceId}`, () => recordCrash(db, c, now, policy, tails));
    if (outcome.counted > 0) {
      applied.crashes += outcome.counted;
      applied.crashedServices++;
      metrics?.crashes.add(outcome.counted, { service_id: c.serviceId });
      log.info('service crashed', { serviceId: c.serviceId, deaths: outcome.counted, crashCount: outcome.crashCount, reason: c.reason });
    }
    // A retry finds the crash already counted; an open circuit on this container still needs its stop and its workflow.
    const circuit = outcome.opened ?? openCircuitOn(db, c.serviceId, c.containerId, c.rules?.policy ?? policy);
    if (circuit) {
      applied.opened.push(circuit);
      if (outcome.opened)
        log.warn('circuit opened: container stopped and kept', {
          serviceId: c.serviceId,
          opening: circuit.opening,
          escalation: circuit.escalation,
          retryAt: circuit.retryAt,
        });
      await act(`stop ${c.containerId.slice(0, 12)}`, () => docker.stopContainer(c.containerId));
    } else if (c.restart && outcome.counted > 0) {
      // ah stops an unhealthy container, but Docker does not restart a container stopped through its API (W-4).
      if (await act(`restart ${c.containerId.slice(0, 12)}`, () => docker.restartContainer(c.containerId))) applied.unhealthyRestarted++;
    }
  }
}

function applyRowChanges({ db, log }: ApplyDeps, obs: TickObservation, applied: TickApplied, now: number): void {
  for (const l of obs.looks) swapSnapshot(db, l.serviceId, l.expected, l.next, now);
  for (const id of obs.oomConfirmed ?? []) {
    if (!confirmOomKill(db, id)) continue;
    applied.oomConfirmed = (applied.oomConfirmed ?? 0) + 1;
    log.info("a death recorded as SIGKILL was an OOM kill: the engine's oom event came after it; record corrected", { record: id });
  }
  for (const b of obs.backUp) if (markServiceRunning(db, b.serviceId, b.containerId, now)) applied.recovered++;
  for (const g of obs.gone)
    if (markServiceStopped(db, g.serviceId, g.containerId, now, 'container not found by reconciler')) applied.missing++;
  for (const v of obs.vanished ?? []) {
    if (!stopVanishedService(db, v, now)) continue;
    applied.missing++;
    log.info('service stopped: its container is gone', { serviceId: v.serviceId, from: v.fromStatus, reason: v.reason });
  }
  for (const d of obs.databases) {
    if (!setDatabaseStatus(db, d.id, d.from, d.to, now)) continue;
    if (d.to === 'ready') applied.databasesReady++;
    else applied.databasesUnavailable++;
    log.info(`database ${d.to}`, { databaseId: d.id });
  }
  for (const e of obs.environmentsDown) {
    if (!stopEnvironment(db, e.id, now)) continue;
    applied.environmentsStopped++;
    log.info('environment stopped', { environmentId: e.id, reason: e.reason });
  }
}

/** Split-brain containers and bad rows are logged once each, not every tick. */
function reportOnce({ db, log }: ApplyDeps, obs: TickObservation, now: number): void {
  for (const s of obs.splitBrain) {
    if (reportProblemOnce(db, `container:${s.containerId}`, 'split-brain', now)) {
      log.warn('split-brain: container claims a service the DB does not give it; not repaired (labels can be spoofed)', { ...s });
    }
  }
  for (const p of obs.problems) {
    if (reportProblemOnce(db, p.subject, p.problem, now)) log.warn('bad input skipped', { subject: p.subject, problem: p.problem });
  }
}

function openCircuitOn(db: ApplyDeps['db'], serviceId: string, containerId: string, policy: CrashPolicy): CircuitRef | undefined {
  const c = readCircuit(db, serviceId);
  if (!c?.open || c.containerId !== containerId || c.retryAt === null) return undefined;
  // Opened by keeper (a retried tick's own opening): its why, as the first attempt said it.
  const why = c.openedAt === null ? undefined : openingWhy(c.crashCount, policy);
  const opening = c.opening === null ? {} : { opening: c.opening };
  return { serviceId, ...opening, escalation: c.escalation, retryAt: c.retryAt, ...(why ? { why } : {}) };
}
