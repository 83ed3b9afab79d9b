/**
 * What the tick reads of a service's deaths: the evidence at the look (deathEvidence: the inspect, or a 404, and
 * keeper's stored view) and then the engine's events (readDeathEvents: one read per tick, for every container whose
 * look shows deaths, or may, and for the recorded deaths whose OOM kill may still be confirmed; only when one needs
 * it), with whether that read reached the tick's end. What that evidence shows is the pure story of
 * src/policy/deaths/ (its index.ts); this file only reads it, hands it on, and adds what the story found to the
 * tick's observation.
 */
import type { ContainerDetails, DockerEvent, Engine } from '../../docker/engine';
import { DockerError } from '../../docker/errors';
import type { ContainerSnapshot, ServiceCrashRules, TickObservation } from '../../contracts/reconcile';
import type { StoredSnapshot } from '../../db/container-snapshots';
import type { ServiceRow } from '../../db/services';
import { deathsFound, type DeathsFound } from '../../policy/deaths';
import {
  KILL_BEFORE_DIE_MS,
  type ContainerEventFact,
  type CountedBefore,
  type DeathEvidence,
  type RunState,
} from '../../policy/deaths/evidence';
import type { ShownDeaths } from '../../policy/deaths/shown';
import { LABEL } from '../../names';

export const DEATH_EVENT_ACTIONS: ContainerEventFact['action'][] = ['die', 'start', 'kill', 'oom'];
const EVENTS_READ_TIMEOUT_MS = 10_000;

/** What the tick has of service `s`'s container at its look. */
export interface AtLook {
  /** keeper's last look at the service's container (of any container), if any. */
  stored: StoredSnapshot | null;
  /** The inspect, or a 404. */
  details: ContainerDetails | 'missing';
  rules?: ServiceCrashRules;
  windowSec: number;
  nowSec: number;
  /** What was counted before: read only at keeper's first look at a container it inspected. */
  countedBefore: () => CountedBefore;
  /** When the engine last started, read only when the container was started since keeper's look before it. */
  engineStartedAtSec?: number | null;
}

/** The evidence of service `s`'s deaths at this look. */
export function deathEvidence(s: ServiceRow, atLook: AtLook): DeathEvidence {
  const containerId = s.containerId as string;
  const { stored, details } = atLook;
  const previous = stored && stored.containerId === containerId ? stored : null;
  const inspected = details === 'missing' ? null : { fullId: details.id, createdAtSec: details.createdAt, run: runStateOf(details) };
  return {
    serviceId: s.id,
    containerId,
    rowStatus: s.status,
    stored: stored && asSnapshot(stored),
    previous,
    current: lookOf(containerId, details, previous),
    inspected,
    upSec: details === 'missing' || !details.startedAt ? 0 : atLook.nowSec - details.startedAt,
    countedBefore: inspected && !previous ? atLook.countedBefore() : null,
    ...(atLook.rules && { rules: atLook.rules }),
    windowSec: atLook.windowSec,
    nowSec: atLook.nowSec,
    ...(atLook.engineStartedAtSec !== undefined && { engineStartedAtSec: atLook.engineStartedAtSec }),
  };
}

function runStateOf(d: ContainerDetails): RunState {
  return {
    status: d.status,
    exitCode: d.exitCode,
    oomKilled: d.oomKilled,
    error: d.error,
    startedAtMs: d.startedAtMs,
    finishedAtMs: d.finishedAtMs,
    restartPolicy: d.restartPolicy,
    unhealthySinceMs: d.unhealthySinceMs,
  };
}

function lookOf(containerId: string, details: ContainerDetails | 'missing', previous: ContainerSnapshot | null): ContainerSnapshot {
  return details === 'missing'
    ? { containerId, state: 'missing', restartCount: previous?.restartCount ?? 0, health: '' }
    : { containerId, state: details.status, restartCount: details.restartCount, health: details.health };
}

/** Deaths a look at a container that is there shows: the engine's events may tell more of them. */
export type PendingCrash = ShownDeaths & Required<Pick<ShownDeaths, 'eventsToRead'>>;

/**
 * The engine's death events as one tick read them, by container, and whether the read reached the tick's end: a
 * read that failed (the engine went away, refused or did not answer in time) covered nothing, and proves nothing.
 */
export interface EventsRead {
  byContainer: Map<string, ContainerEventFact[]>;
  complete: boolean;
}

/** What a tick that needs no events has of them: nothing, and nothing was missed. */
export const NO_EVENTS_NEEDED: EventsRead = { byContainer: new Map(), complete: true };

/**
 * From when the pending crashes need the engine's events: their earliest look, less the longest an engine's kill
 * precedes its die (a look taken between the two must not hide the kill that makes the die an engine stop: S2 in
 * RELIABILITY.md). Undefined when none is pending.
 */
export function crashEventsFromMs(pending: PendingCrash[]): number | undefined {
  if (pending.length === 0) return undefined;
  return Math.min(...pending.map((p) => p.eventsToRead.fromMs)) - KILL_BEFORE_DIE_MS;
}

/**
 * While the engine's events cannot be read, a service that expects some exit codes has deaths whose count depends on
 * codes only the die events carry: they are held (the snapshot stays), for up to EXIT_CODES_WAIT_MS since keeper's
 * look before them, and are then counted with what is known (an unknown code is never expected: S6).
 */
export const EXIT_CODES_WAIT_MS = 120_000;

function waitsForExitCodes(p: PendingCrash, events: EventsRead, nowMs: number): boolean {
  return !events.complete && (p.evidence.rules?.expectedExitCodes.length ?? 0) > 0 && nowMs - p.sinceMs < EXIT_CODES_WAIT_MS;
}

/**
 * Each pending crash's story told on with its container's events (the tick's one read). One whose decision the read
 * did not cover is held: it stays pending, and its snapshot unchanged, for a later read to decide. Returns how many.
 */
export function settleCrashes(pending: PendingCrash[], events: EventsRead, obs: TickObservation, nowMs: number, graceMs: number): number {
  let held = 0;
  for (const p of pending) {
    if (waitsForExitCodes(p, events, nowMs)) held++;
    else addFound(obs, p, deathsFound(p, events.byContainer.get(p.eventsToRead.fullId) ?? [], nowMs, graceMs));
  }
  return held;
}

/** What the story found of `shown`'s deaths, in the tick's observation: a crash, or a look (and a service back up). */
export function addFound(obs: TickObservation, shown: ShownDeaths, found: DeathsFound): void {
  const { serviceId, containerId, stored } = shown.evidence;
  if (found.heldEngineStop) obs.engineStopsHeld = (obs.engineStopsHeld ?? 0) + 1;
  if (found.crash) return void obs.crashes.push(found.crash);
  if (!stored || !sameSnapshot(stored, found.look)) obs.looks.push({ serviceId, expected: stored, next: found.look });
  if (found.backUp) obs.backUp.push({ serviceId, containerId });
}

/** ah services' die, start, kill and oom events in [sinceMs, untilMs], by container, and whether the read was whole. */
export async function readDeathEvents(
  docker: Pick<Engine, 'readEvents'>,
  sinceMs: number,
  untilMs: number,
  obs: TickObservation,
): Promise<EventsRead> {
  const byContainer = new Map<string, ContainerEventFact[]>();
  let events: DockerEvent[];
  try {
    events = await docker.readEvents({
      since: (sinceMs / 1000).toFixed(3),
      until: (untilMs / 1000).toFixed(3),
      labels: { [LABEL.service]: true },
      types: ['container'],
      actions: DEATH_EVENT_ACTIONS,
      signal: AbortSignal.timeout(EVENTS_READ_TIMEOUT_MS),
    });
  } catch (err) {
    if (!(err instanceof DockerError)) throw err;
    // The facts that events carry are then unknown; the inspect's still stand.
    if (obs.transientSamples.length < 3) obs.transientSamples.push(`events since the last snapshot: ${err.message}`);
    return { byContainer, complete: false };
  }
  for (const e of events) {
    const action = e.action as ContainerEventFact['action'];
    if (!DEATH_EVENT_ACTIONS.includes(action)) continue;
    const fact: ContainerEventFact = { action, atMs: Number(e.timeNano / 1_000_000n) };
    if (action === 'die' && /^-?\d+$/.test(e.attributes.exitCode ?? '')) fact.exitCode = Number(e.attributes.exitCode);
    if (action === 'kill' && e.attributes.signal) fact.signal = e.attributes.signal;
    byContainer.set(e.id, [...(byContainer.get(e.id) ?? []), fact]);
  }
  return { byContainer, complete: true };
}

/** The look's own fields, without what a stored look adds (its time): what a compare-and-set compares. */
function asSnapshot(l: ContainerSnapshot): ContainerSnapshot {
  return { containerId: l.containerId, state: l.state, restartCount: l.restartCount, health: l.health };
}

export function sameSnapshot(a: ContainerSnapshot, b: ContainerSnapshot): boolean {
  return a.containerId === b.containerId && a.state === b.state && a.restartCount === b.restartCount && a.health === b.health;
}
