/**
 * Deaths the engine caused, pure. When dockerd shuts down (an upgrade, `systemctl restart docker`, a host
 * reboot) it sends every running container its stop signal, then SIGKILL after the stop timeout, and keeps
 * answering on open connections until the last one is dead: a tick in that window sees every service's
 * container exited (with 0, 143 or 137). When the engine starts again it starts them again itself (restart
 * policy), before it answers. Those deaths are not the tenant's crashes.
 *
 * The rule: a container that is down now, not OOM killed and without an engine error, is **stopped by the
 * engine** when the engine's own `kill` reached it shortly before its `die`; when that event is no longer to
 * be had, when its restart policy is one under which Docker restarts every crash (so a crash would have left it
 * `restarting` or running, never down). Such a death is **held**, not counted, for `--engine-stop-grace`: the
 * engine coming back starts the container again, and the next look finds it running with a fresh run, so
 * nothing is counted. One still down after the grace (a stop outside ah, or an engine that did not bring it
 * back) is counted then, once.
 *
 * What it cannot hide: a process that dies by itself has no `kill` before its `die`, and under a restart
 * policy Docker restarts it (RestartCount), so every death of a real crash loop is counted as before, within
 * the same minute as a daemon restart too. An OOM kill and a failed restart (the engine's State.Error) are
 * always counted at once.
 */
import { dieOf, type ContainerEventFact, type RunState } from './facts';
import type { DeathFacts } from '../../contracts/reconcile';

/** Restart policies under which Docker restarts a container after every exit of its process. */
export const RESTART_EVERY_EXIT = new Set(['always', 'unless-stopped']);
/** The engine's kill (the stop signal, or SIGKILL after the stop timeout) comes this close before the die. */
export const KILL_BEFORE_DIE_MS = 15_000;

/** Whether the engine itself stopped the container whose down state `look` describes. */
export function stoppedByEngine(look: DeathFacts, state: RunState, events: ContainerEventFact[]): boolean {
  if (look.seenBy !== 'look' || look.oomKilled || look.engineError) return false;
  const die = dieOf(
    state,
    events.filter((e) => e.action === 'die'),
  );
  if (!die) return RESTART_EVERY_EXIT.has(state.restartPolicy);
  return events.some((e) => e.action === 'kill' && e.atMs <= die.atMs && die.atMs - e.atMs <= KILL_BEFORE_DIE_MS);
}

/** A death the engine caused, still inside the grace in which the engine may start the container again. */
export function isHeldEngineStop(look: DeathFacts, state: RunState, events: ContainerEventFact[], nowMs: number, graceMs: number): boolean {
  if (look.diedAtMs === null || nowMs - look.diedAtMs >= graceMs) return false;
  return stoppedByEngine(look, state, events);
}
