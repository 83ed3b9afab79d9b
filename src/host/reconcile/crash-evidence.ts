/**
 * The tick's crash evidence. For the containers whose new snapshot shows deaths, or may (keeper's first snapshot of
 * a container that Docker has restarted), it reads the engine's events since keeper's last snapshot (one read for
 * all of them, only when some container may have died), counts a first snapshot's deaths from their die events
 * (policy/crash.ts), works out each death's facts (policy/death-facts.ts), dates them (policy/death-dating.ts)
 * and applies the engine-stop rule (policy/engine-stop.ts): a death the engine itself caused is held, not
 * counted, while the engine may still start the container again.
 */
import type { ContainerDetails, DockerEvent, Engine } from '../../docker/engine';
import { DockerError } from '../../docker/errors';
import type { ContainerSnapshot, CountedDeath, ServiceCrashRules, TickObservation } from '../../contracts/reconcile';
import { deathsAtFirstSnapshot, type FirstSnapshot } from '../../policy/crash';
import { crashReason } from '../../policy/crash-words';
import { dateDeaths, restartLoopOf, type RestartLoop } from '../../policy/death-dating';
import {
  factsOfDeaths,
  LOG_LOOKBACK_MS,
  restartDiesOf,
  runsEndingIn,
  type ContainerEventFact,
  type RunState,
} from '../../policy/death-facts';
import { isHeldEngineStop, stoppedByEngine } from '../../policy/engine-stop';
import { LABEL } from '../../names';

/** A container whose new snapshot shows deaths, waiting for its evidence. */
export interface PendingCrash {
  serviceId: string;
  /** As the service row holds it (maybe a 12-character prefix). */
  containerId: string;
  /** The engine's full id: events name containers by it. */
  fullId: string;
  /** The snapshot this crash replaces, and the snapshot that proves it. */
  stored: ContainerSnapshot | null;
  current: ContainerSnapshot;
  /** Deaths the snapshot shows: RestartCount's, and one more when the container is down now (at a first snapshot, the events decide). */
  deaths: number;
  /** keeper's first snapshot of this container: its deaths are counted from their die events after this baseline. */
  firstSnapshot?: FirstSnapshot;
  /** No death counted after all: a crashed service whose container has been up long enough is back up. */
  backUpIfNoDeaths?: boolean;
  downNow: boolean;
  unhealthy: boolean;
  statusAfter: 'crashed' | 'running';
  run: RunState;
  /** Events from here on can be this container's deaths: keeper's last snapshot of it, or a first snapshot's baseline. */
  sinceMs: number;
  /** Events are read from here (a first snapshot reads from the container's creation, to tell gone events from the baseline); sinceMs when absent. */
  readFromMs?: number;
  /** The service's own crash policy, from its labels. */
  rules?: ServiceCrashRules;
}

export const DEATH_EVENT_ACTIONS: ContainerEventFact['action'][] = ['die', 'start', 'kill', 'oom'];
const EVENTS_READ_TIMEOUT_MS = 10_000;

export function runStateOf(d: ContainerDetails): RunState {
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

/** Turns the pending crashes into the observation's crash records (and held engine stops). */
export async function settleCrashes(
  docker: Pick<Engine, 'readEvents'>,
  pending: PendingCrash[],
  obs: TickObservation,
  nowMs: number,
  graceMs: number,
): Promise<void> {
  if (pending.length === 0) return;
  const events = await readDeathEvents(docker, Math.min(...pending.map((p) => p.readFromMs ?? p.sinceMs)) - 1000, nowMs, obs);
  for (const p of pending) settle(p, events.get(p.fullId) ?? [], obs, nowMs, graceMs);
}

/** The deaths to count: the snapshot's, or at a first snapshot those whose die event falls after the baseline. */
function deathCount(p: PendingCrash, events: ContainerEventFact[]): number {
  if (!p.firstSnapshot) return p.deaths;
  const restarts = p.current.restartCount;
  const dies = restartDiesOf(p.run, p.downNow, events, restarts).map((d) => d.atMs);
  return deathsAtFirstSnapshot(p.firstSnapshot, restarts, dies, { now: p.downNow, atMs: p.run.finishedAtMs });
}

/** How Docker restarted the container between the counted deaths: what places those that kept no time. */
function loopOf(p: PendingCrash, deaths: number, events: ContainerEventFact[]): RestartLoop | undefined {
  const restarts = deaths - (p.downNow ? 1 : 0);
  const dies = restartDiesOf(p.run, p.downNow, events, restarts);
  return restartLoopOf({
    status: p.run.status,
    startedAtMs: p.run.startedAtMs,
    finishedAtMs: p.run.finishedAtMs,
    restartCount: p.current.restartCount,
    restarts,
    eventRunsMs: runsEndingIn(dies, events),
  });
}

function settle(p: PendingCrash, events: ContainerEventFact[], obs: TickObservation, nowMs: number, graceMs: number): void {
  const count = deathCount(p, events);
  const deaths: CountedDeath[] = factsOfDeaths(count, p.downNow, p.run, events);
  let next = p.current;
  let statusAfter = p.statusAfter;
  const look = p.downNow ? deaths[deaths.length - 1] : undefined;
  if (look && isHeldEngineStop(look, p.run, events, nowMs, graceMs)) {
    // As if the engine had not stopped it yet: the next observation decides again, from the same earlier snapshot.
    deaths.pop();
    next = { ...p.current, state: 'running', health: p.stored?.health ?? '' };
    statusAfter = 'running';
    obs.engineStopsHeld = (obs.engineStopsHeld ?? 0) + 1;
  } else if (look && stoppedByEngine(look, p.run, events)) {
    look.engineStopped = true;
  }
  if (p.unhealthy) deaths.push(healthCheckDeath(p.run, nowMs));
  if (deaths.length === 0) {
    if (!p.stored || !sameSnapshot(p.stored, next)) obs.looks.push({ serviceId: p.serviceId, expected: p.stored, next });
    if (p.backUpIfNoDeaths) obs.backUp.push({ serviceId: p.serviceId, containerId: p.containerId });
    return;
  }
  const reason = p.unhealthy ? 'container unhealthy (health check failed)' : crashReason(deaths, p.current.state);
  obs.crashes.push({
    serviceId: p.serviceId,
    containerId: p.containerId,
    expectedLook: p.stored,
    nextLook: next,
    deaths: deaths.length,
    reason,
    statusAfter,
    restart: p.unhealthy,
    facts: dateDeaths(deaths, { sinceMs: p.sinceMs, untilMs: nowMs }, count > 0 ? loopOf(p, count, events) : undefined),
    ...(p.rules ? { rules: p.rules } : {}),
  });
}

/**
 * The unhealthy run is alive: its output up to now is what led to the failed checks. It is dated when its health
 * check made it unhealthy (the engine's health log), not when a look found it: a look under a silent event stream
 * must see that the stream owed its `health_status` event long ago, not that it just happened.
 */
function healthCheckDeath(run: RunState, nowMs: number): CountedDeath {
  const since = Math.max(run.startedAtMs ?? nowMs - LOG_LOOKBACK_MS, nowMs - LOG_LOOKBACK_MS);
  return {
    seenBy: 'health-check',
    diedAtMs: Math.min(run.unhealthySinceMs ?? nowMs, nowMs),
    exitCode: null,
    oomKilled: null,
    engineError: '',
    logWindow: { sinceMs: since, untilMs: nowMs },
  };
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

/** The snapshot's own fields, without what a stored snapshot adds (its time): what a compare-and-set compares. */
export function asSnapshot(l: ContainerSnapshot): ContainerSnapshot {
  return { containerId: l.containerId, state: l.state, restartCount: l.restartCount, health: l.health };
}

export function sameSnapshot(a: ContainerSnapshot, b: ContainerSnapshot): boolean {
  return a.containerId === b.containerId && a.state === b.state && a.restartCount === b.restartCount && a.health === b.health;
}
