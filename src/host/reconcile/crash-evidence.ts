/**
 * What the tick reads of a service's deaths: the evidence at the look (deathEvidence: the inspect, or a 404, and
 * keeper's stored view) and then the engine's events since keeper's last look (readDeathEvents: one read for every
 * container whose look shows deaths, or may, and only when one does). What that evidence shows is the pure story of
 * src/policy/deaths/ (its index.ts); this file only reads it, hands it on, and adds what the story found to the
 * tick's observation.
 */
import type { ContainerDetails, DockerEvent, Engine } from '../../docker/engine';
import { DockerError } from '../../docker/errors';
import type { ContainerSnapshot, ServiceCrashRules, TickObservation } from '../../contracts/reconcile';
import type { StoredSnapshot } from '../../db/container-snapshots';
import type { ServiceRow } from '../../db/services';
import { deathsFound, type DeathsFound } from '../../policy/deaths';
import type { ContainerEventFact, CountedBefore, DeathEvidence, RunState } from '../../policy/deaths/evidence';
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

/** The pending crashes' events read once, and each one's story told on with its container's. */
export async function settleCrashes(
  docker: Pick<Engine, 'readEvents'>,
  pending: PendingCrash[],
  obs: TickObservation,
  nowMs: number,
  graceMs: number,
): Promise<void> {
  if (pending.length === 0) return;
  const events = await readDeathEvents(docker, Math.min(...pending.map((p) => p.eventsToRead.fromMs)) - 1000, nowMs, obs);
  for (const p of pending) addFound(obs, p, deathsFound(p, events.get(p.eventsToRead.fullId) ?? [], nowMs, graceMs));
}

/** What the story found of `shown`'s deaths, in the tick's observation: a crash, or a look (and a service back up). */
export function addFound(obs: TickObservation, shown: ShownDeaths, found: DeathsFound): void {
  const { serviceId, containerId, stored } = shown.evidence;
  if (found.heldEngineStop) obs.engineStopsHeld = (obs.engineStopsHeld ?? 0) + 1;
  if (found.crash) return void obs.crashes.push(found.crash);
  if (!stored || !sameSnapshot(stored, found.look)) obs.looks.push({ serviceId, expected: stored, next: found.look });
  if (found.backUp) obs.backUp.push({ serviceId, containerId });
}

/** ah services' die, start, kill and oom events in [sinceMs, untilMs], by container; none when unreadable. */
export async function readDeathEvents(
  docker: Pick<Engine, 'readEvents'>,
  sinceMs: number,
  untilMs: number,
  obs: TickObservation,
): Promise<Map<string, ContainerEventFact[]>> {
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
    return byContainer;
  }
  for (const e of events) {
    const action = e.action as ContainerEventFact['action'];
    if (!DEATH_EVENT_ACTIONS.includes(action)) continue;
    const fact: ContainerEventFact = { action, atMs: Number(e.timeNano / 1_000_000n) };
    if (action === 'die' && /^-?\d+$/.test(e.attributes.exitCode ?? '')) fact.exitCode = Number(e.attributes.exitCode);
    if (action === 'kill' && e.attributes.signal) fact.signal = e.attributes.signal;
    byContainer.set(e.id, [...(byContainer.get(e.id) ?? []), fact]);
  }
  return byContainer;
}

/** The look's own fields, without what a stored look adds (its time): what a compare-and-set compares. */
function asSnapshot(l: ContainerSnapshot): ContainerSnapshot {
  return { containerId: l.containerId, state: l.state, restartCount: l.restartCount, health: l.health };
}

export function sameSnapshot(a: ContainerSnapshot, b: ContainerSnapshot): boolean {
  return a.containerId === b.containerId && a.state === b.state && a.restartCount === b.restartCount && a.health === b.health;
}
