/**
 * Step 5 of a death's story (index.ts): the engine-stop hold. Deaths the engine caused, pure. When dockerd shuts
 * down (an upgrade, `systemctl restart docker`, a host reboot) it sends every running container its stop signal,
 * then SIGKILL after the stop timeout, and keeps answering on open connections until the last one is dead: a tick
 * in that window sees every service's container exited (with 0, 143 or 137). When the engine starts again it
 * starts them again itself (restart policy), before it answers. Those deaths are not the tenant's crashes.
 *
 * The rule: a container that is down now, not OOM killed and without an engine error, is **stopped by the
 * engine** when its restart policy is one under which Docker restarts every crash (so a crash would have left it
 * `restarting` or running, never down; but for a restart dockerd's shutdown cancelled, which RestartCount shows),
 * and under any other policy when the engine's own `kill` reached it shortly before its `die`. Such a death is
 * **held**, not counted, for `--engine-stop-grace`: the
 * engine coming back starts the container again, and the next look finds it running with a fresh run, so
 * nothing is counted. One still down after the grace (a stop outside ah, or an engine that did not bring it
 * back) is counted then, once.
 *
 * What it cannot hide: a process that dies by itself has no `kill` before its `die`, and under a restart
 * policy Docker restarts it (RestartCount), so every death of a real crash loop is counted as before, within
 * the same minute as a daemon restart too. An OOM kill and a failed restart (the engine's State.Error) are
 * always counted at once.
 */
import type { ContainerSnapshot, CountedDeath, DeathFacts } from '../../contracts/reconcile';
import type { CountedDeaths } from './counted';
import { KILL_BEFORE_DIE_MS, RESTART_EVERY_EXIT, type ContainerEventFact, type RunState } from './evidence';
import type { ShownDeaths } from './shown';

/** The deaths after the hold, and what the look and the service's status become. */
export interface EngineStopHold {
  /** The deaths to count: without a held one; one the engine stopped after the grace is marked `engineStopped`. */
  deaths: CountedDeath[];
  /** A death the engine caused was held, not counted. */
  held: boolean;
  /** The look to store: the current one, or, for a held stop, as if the engine had not stopped it yet. */
  look: ContainerSnapshot;
  statusAfter: 'crashed' | 'running';
}

/** Holds the death of a container down now that the engine itself stopped, while inside the grace (at `nowMs`). */
export function engineStopHold(
  deaths: CountedDeath[],
  shown: ShownDeaths,
  counted: Pick<CountedDeaths, 'lookDie' | 'restartCancelled'>,
  events: ContainerEventFact[],
  nowMs: number,
  graceMs: number,
): EngineStopHold {
  const { current, stored, inspected } = shown.evidence;
  const unchanged: EngineStopHold = { deaths, held: false, look: current, statusAfter: shown.statusAfter };
  const look = deaths.find((d) => d.seenBy === 'look');
  if (!inspected || !look) return unchanged;
  if (isHeldEngineStop(look, inspected.run, events, counted, nowMs, graceMs)) {
    // As if the engine had not stopped it yet: the next look decides again, from the same earlier look.
    const asRunning = { ...current, state: 'running', health: stored?.health ?? '' };
    return { deaths: deaths.filter((d) => d !== look), held: true, look: asRunning, statusAfter: 'running' };
  }
  if (!stoppedByEngine(look, inspected.run, events, counted)) return unchanged;
  return { ...unchanged, deaths: deaths.map((d) => (d === look ? { ...d, engineStopped: true } : d)) };
}

/**
 * Whether the engine itself stopped the container whose down state `look` describes (its die event: `lookDie`).
 * Under a policy that restarts every exit, Docker never leaves a container down after a death of its own (it is
 * `restarting` from the exit on), unless its shutdown cancelled that restart (`restartCancelled`: RestartCount shows
 * the death): one down otherwise was stopped, whatever the events say. They cannot say it in a shutdown: dockerd
 * kills every container at once and the dies follow, so its 256-event buffer may keep a container's die and have lost
 * its kill (seen by the soak: 2 of 973 stops in one run, 11 in another).
 */
export function stoppedByEngine(
  look: DeathFacts,
  state: RunState,
  events: ContainerEventFact[],
  { lookDie, restartCancelled }: Pick<CountedDeaths, 'lookDie' | 'restartCancelled'>,
): boolean {
  if (look.seenBy !== 'look' || look.oomKilled || look.engineError) return false;
  if (RESTART_EVERY_EXIT.has(state.restartPolicy)) return !restartCancelled;
  if (!lookDie) return false;
  return events.some((e) => e.action === 'kill' && e.atMs <= lookDie.atMs && lookDie.atMs - e.atMs <= KILL_BEFORE_DIE_MS);
}

/** A death the engine caused, still inside the grace in which the engine may start the container again. */
export function isHeldEngineStop(
  look: DeathFacts,
  state: RunState,
  events: ContainerEventFact[],
  counted: Pick<CountedDeaths, 'lookDie' | 'restartCancelled'>,
  nowMs: number,
  graceMs: number,
): boolean {
  if (look.diedAtMs === null || nowMs - look.diedAtMs >= graceMs) return false;
  return stoppedByEngine(look, state, events, counted);
}
