/**
 * An open circuit's two effects: holding its opening (its container stopped but kept, for its logs) and recovering
 * it once, by a compare-and-set on that opening, so any number of attempts close one opening at most once, and a run
 * of an older opening never closes a newer one.
 */
import { DockerError, ignoreNotFound } from '../docker/errors';
import { heldOpening, holdCurrentOpening, holdCurrentOpeningIf } from '../db/circuit-holds';
import { takeOverOpening } from '../db/circuit-openings';
import { deathsOfWindow } from '../db/crash-records';
import { setSnapshot } from '../db/container-snapshots';
import { closeCircuit, isOpenOn, listCircuits, readCircuit, type CircuitRow, type Recovery } from '../db/services';
import type { DeathSummary, HeldCircuit, RecoveryResult } from '../contracts/circuit';
import type { CircuitRef } from '../contracts/reconcile';
import { isValidContainerId } from '../policy/rows';
import { unixSeconds } from '../time';
import type { HostDeps } from './deps';
import { engineStartedAtSec } from './engine-start';

/** An alert and a memo carry at most this many deaths: the threshold's worth, by default. */
export const DEATHS_PER_CIRCUIT = 10;

export async function holdCircuit(
  { db, docker, clock, settings }: Pick<HostDeps, 'db' | 'docker' | 'clock' | 'settings'>,
  serviceId: string,
): Promise<HeldCircuit> {
  const seen = readCircuit(db, serviceId);
  if (!seen?.open) return notOpen(seen);
  if (isValidContainerId(seen.containerId)) await ignoreNotFound(docker.stopContainer(seen.containerId));
  // From here this opening has its timer: the worker's look no longer requests a tick to hand it over. One keeper has
  // not numbered (ah opened it; a reset came before any tick) is taken over here.
  const now = unixSeconds(clock);
  const opening = holdCurrentOpening(db, serviceId, now);
  const c = readCircuit(db, serviceId);
  if (opening === undefined || !c?.open) return notOpen(c); // closed meanwhile
  const retryAt = c.retryAt ?? now;
  return {
    open: true,
    opening,
    escalation: c.escalation,
    retryAt,
    remainingMs: Math.max(0, retryAt * 1000 - clock.nowMs()),
    hostId: settings.hostId,
    alerts: settings.notifyWebhooks.length > 0,
    deaths: c.windowStart === null ? [] : deathSummaries(db, serviceId, c.windowStart),
  };
}

/** A circuit that is not open: the run that wanted to hold it has nothing to hold. */
function notOpen(c: CircuitRow | undefined): HeldCircuit {
  return { open: false, ...(c?.opening ? { opening: c.opening } : {}), escalation: c?.escalation ?? 0, retryAt: 0, remainingMs: 0 };
}

/** The recorded deaths of the window that opened the circuit, as an alert and a memo carry them. */
function deathSummaries(db: HostDeps['db'], serviceId: string, windowStart: number): DeathSummary[] {
  return deathsOfWindow(db, serviceId, windowStart, DEATHS_PER_CIRCUIT).map(({ diedAtMs, reason, containerId }) => ({
    diedAtMs,
    reason,
    containerId: containerId.slice(0, 12),
  }));
}

/**
 * Closes the circuit's opening `r.opening` (a run from before openings were numbered: see Recovery); with
 * --recovery restart, starts the kept container first. A circuit open on another opening is not recovered: the
 * result says it reopened, and the run continues as new to hold that one.
 */
export async function recoverCircuit(
  { db, docker, settings, log, clock }: Pick<HostDeps, 'db' | 'docker' | 'settings' | 'log' | 'clock'>,
  r: Pick<Recovery, 'serviceId' | 'opening' | 'escalation' | 'retryAt' | 'trigger'>,
  firstAttemptAtSec?: number,
): Promise<RecoveryResult> {
  const c = readCircuit(db, r.serviceId);
  if (!c?.open) return { recovered: false };
  if (!isOpenOn(db, r)) return { recovered: false, reopened: true };
  const containerId = c.containerId;
  const restart = settings.recovery === 'restart' && isValidContainerId(containerId);
  const { alreadyRunning, ...started } = restart ? await startKept(docker, containerId) : { status: 'stopped' as const };
  const now = unixSeconds(clock);
  const startedBySec = Math.min(now, firstAttemptAtSec ?? now);
  const countFrom =
    alreadyRunning && containerId ? await countFromNow(docker, containerId, c, { now, startedBySec }) : { restartCount: 0, atSec: now };
  const recovered = closeCircuit(db, { ...r, ...started }, now);
  if (recovered && started.status === 'running' && containerId) {
    setSnapshot(db, r.serviceId, { containerId, state: 'running', restartCount: countFrom.restartCount, health: '' }, countFrom.atSec);
  }
  // Not closed by this attempt: closed meanwhile (another attempt), or open again on a newer opening.
  if (!recovered) return readCircuit(db, r.serviceId)?.open ? { recovered, reopened: true } : { recovered };
  const result: RecoveryResult = { recovered, status: started.status, ...(started.error ? { error: started.error } : {}) };
  const which = { serviceId: r.serviceId, opening: r.opening ?? c.opening, escalation: c.escalation };
  log.info('circuit closed', { ...which, trigger: r.trigger, status: result.status, ...(result.error ? { error: result.error } : {}) });
  return result;
}

/**
 * A run from before openings were numbered, asked to look again (`recheck`): it holds the open circuit's opening if
 * that is the one it began holding (its escalation and retry time), numbering it first if keeper has not. Its number,
 * or undefined when the circuit is closed or open on another opening (the run then continues as new).
 */
export function holdSameOpening(
  { db, clock }: Pick<HostDeps, 'db' | 'clock'>,
  r: Pick<Recovery, 'serviceId' | 'escalation'> & { retryAt: number },
): number | undefined {
  return holdCurrentOpeningIf(db, r, unixSeconds(clock));
}

/**
 * Where the next look counts from, for a kept container found running already: a RestartCount, as of a time. A
 * start through the API resets RestartCount, and later deaths are counted from 0. One that dockerd brought back
 * while the circuit was open, before this recovery began (the engine started after the opening and before the first
 * attempt), keeps its count: its deaths so far were the open circuit's, not the closed one's (S7). Any other run began
 * after the recovery did: the first attempt's own start (whose close did not commit: the soak, under a held SQLite
 * lock), or its start that reached the engine only as dockerd came back (S10), or dockerd's own start of it after the
 * retry time. Its deaths are the recovered service's: counted from 0, as of `at.startedBySec` (the first attempt).
 * Dated now instead, a look would take a run Docker restarted between the two attempts for one it had already seen,
 * not inspect it, and miss those deaths (the soak's run D: 2 deaths of a crash loop, 2.7 s apart).
 */
async function countFromNow(
  docker: HostDeps['docker'],
  containerId: string,
  c: CircuitRow,
  at: { now: number; startedBySec: number },
): Promise<{ restartCount: number; atSec: number }> {
  const openSince = c.openedAt ?? c.takenOverAt;
  const engineStarted = openSince === null ? null : await engineStartedAtSec(docker);
  const broughtBack = engineStarted !== null && openSince !== null && engineStarted > openSince && engineStarted < at.startedBySec;
  return broughtBack
    ? { restartCount: await restartCountNow(docker, containerId), atSec: at.now }
    : { restartCount: 0, atSec: at.startedBySec };
}

/** RestartCount of a container that runs; 0 when it is gone by now (its death is then the next look's to see). */
async function restartCountNow(docker: HostDeps['docker'], containerId: string): Promise<number> {
  try {
    return (await docker.inspectContainer(containerId)).restartCount;
  } catch (err) {
    if (!(err instanceof DockerError && err.isNotFound)) throw err; // transient: the activity retries
    return 0;
  }
}

/** Starts the kept container; a container that is gone leaves the service stopped with the reason. */
async function startKept(
  docker: HostDeps['docker'],
  containerId: string,
): Promise<{ status: Recovery['status']; error?: string; alreadyRunning?: boolean }> {
  try {
    return (await docker.startContainer(containerId)) ? { status: 'running' } : { status: 'running', alreadyRunning: true };
  } catch (err) {
    if (!(err instanceof DockerError && err.isNotFound)) throw err; // transient: the activity retries
    return { status: 'stopped', error: 'kept container is gone; redeploy required' };
  }
}

/**
 * The tick's hand-over of the circuits it starts workflows for (opened, expired, or held by none): each with its
 * opening's number (taken over when keeper has not numbered it: ah opened it, or it was open before openings were
 * numbered), and whether a workflow holds that opening already. A circuit closed since is left out.
 */
export function handOverCircuits({ db, clock }: Pick<HostDeps, 'db' | 'clock'>, refs: CircuitRef[]): CircuitRef[] {
  const now = unixSeconds(clock);
  return refs.flatMap((c) => {
    const opening = takeOverOpening(db, c.serviceId, now);
    return opening === undefined ? [] : [{ ...c, opening, held: heldOpening(db, c.serviceId) === opening }];
  });
}

/** Open circuits, and closed ones still escalated: `keeper circuit list`. */
export function circuitList({ db }: Pick<HostDeps, 'db'>): CircuitRow[] {
  return listCircuits(db);
}

/** One service's circuit row, or undefined when there is no such service. */
export function circuitOf({ db }: Pick<HostDeps, 'db'>, serviceId: string): CircuitRow | undefined {
  return readCircuit(db, serviceId);
}
