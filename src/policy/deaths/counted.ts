/**
 * Step 3 of a death's story (index.ts), with the engine's events: which deaths count, and which die event is whose.
 * The events are read after the inspect, so some may be of deaths the inspect does not show yet; the die of a
 * container down now is the look's death, the others were Docker's restarts. At keeper's first look at a container,
 * only the restarts whose die event falls after its baseline count (and, when the events of older ones are gone,
 * those too if the old rule counts them). All times are unix milliseconds.
 */
import { KILL_BEFORE_DIE_MS, RESTART_EVERY_EXIT, type ContainerEventFact, type RunState } from './evidence';
import { isDown, type FirstSnapshot, type ShownDeaths } from './shown';

/** The inspect's FinishedAt and the die event's time are taken apart: the die may carry a time this much earlier. */
const DIE_EVENT_EARLY_MS = 100;

/** The deaths to count, and the die events the engine still has of them. */
export interface CountedDeaths {
  /** The look's deaths, or at a first look those after its baseline. */
  deaths: number;
  /** The last of them left the container down (the look's death); the others were restarts by Docker. */
  downNow: boolean;
  /** The die events of the counted restarts, oldest first: fewer when the engine no longer has them all. */
  restartDies: ContainerEventFact[];
  /** The die event that reports the exit the inspect shows of a container down now, if the engine still has it. */
  lookDie?: ContainerEventFact;
  /** The container is down because dockerd's shutdown cancelled the restart its policy had decided: it died by itself. */
  restartCancelled?: boolean;
}

/** The deaths `shown` counts, with this container's `events` since the look before (oldest first). */
export function deathsCounted(shown: ShownDeaths, events: ContainerEventFact[]): CountedDeaths {
  const run = shown.evidence.inspected?.run;
  const { downNow } = shown;
  if (!run) return { deaths: shown.deaths, downNow, restartDies: [] };
  const dies = diesOf(run, downNow, events);
  const restartCount = shown.evidence.current.restartCount;
  const cancelled = restartCancelled(shown, run, dies.look, events);
  const deaths = shown.firstLook
    ? deathsAtFirstSnapshot(
        shown.firstLook,
        restartCount,
        lastOf(dies.restarts, restartCount).map((d) => d.atMs),
        { now: downNow, atMs: run.finishedAtMs },
      )
    : Math.max(shown.deaths - (cancelled ? 1 : 0), diedSinceLook(shown, dies.restarts, events));
  const restartDies = lastOf(dies.restarts, deaths - (downNow ? 1 : 0));
  return { deaths, downNow, restartDies, ...(dies.look && { lookDie: dies.look }), ...(cancelled && { restartCancelled: true }) };
}

/**
 * The deaths since keeper's look before that the events show: each die after it that nothing killed (a stop, a
 * restart by keeper or an operator, the engine's shutdown raise no count), and the look's own. RestartCount's delta
 * falls short of them when dockerd restarted in between (its start sets every count back to 0); it stands alone when
 * the engine no longer has the events. A die in the look's own second may be the look's: left to the delta.
 */
function diedSinceLook(shown: ShownDeaths, restartDies: ContainerEventFact[], events: ContainerEventFact[]): number {
  const afterMs = shown.sinceMs + 1000;
  const selfDies = restartDies.filter((d) => d.atMs >= afterMs && !killedBefore(d, events));
  const previous = shown.evidence.previous;
  return selfDies.length + (shown.downNow && !(previous && isDown(previous.state)) ? 1 : 0);
}

/**
 * Whether something killed the run that `die` ended: a kill at most KILL_BEFORE_DIE_MS before it, with no start
 * between them (a kill before a start was the run before's: dockerd's shutdown kill, then its own start of the
 * container, which died by itself seconds later, seen by the suite's soak).
 */
function killedBefore(die: ContainerEventFact, events: ContainerEventFact[]): boolean {
  const startedBetween = (kill: ContainerEventFact) => events.some((e) => e.action === 'start' && e.atMs > kill.atMs && e.atMs < die.atMs);
  return events.some((e) => e.action === 'kill' && e.atMs <= die.atMs && die.atMs - e.atMs <= KILL_BEFORE_DIE_MS && !startedBetween(e));
}

/**
 * Whether the death of a container down now is already in RestartCount's delta: Docker raises the count when its
 * policy decides to restart (before the restart delay), so a restart that dockerd's shutdown then cancelled leaves
 * the container down with its death counted once by the delta. Told by the events: the container died by itself
 * (no kill before its die) under a policy that restarts every exit, and the engine started it fewer times since the
 * look before than the delta says it restarted it.
 */
function restartCancelled(
  shown: ShownDeaths,
  run: RunState,
  lookDie: ContainerEventFact | undefined,
  events: ContainerEventFact[],
): boolean {
  const { previous, current } = shown.evidence;
  if (shown.firstLook || !shown.downNow || !lookDie || !previous || !RESTART_EVERY_EXIT.has(run.restartPolicy)) return false;
  const delta = current.restartCount - previous.restartCount;
  if (delta < 1 || isDown(previous.state)) return false;
  const killed = killedBefore(lookDie, events);
  const started = events.filter((e) => e.action === 'start' && e.atMs > shown.sinceMs && e.atMs < lookDie.atMs).length;
  return !killed && started === delta - 1;
}

/**
 * The die events of the container's last `restarts` restarts by Docker, oldest first: fewer when the engine no
 * longer has them all. Not the die of a container that is down now, and not a die after what the inspect shows
 * (the events are read after the inspect): one after a running container's start, or after the restart that
 * followed a restarting container's death.
 */
export function restartDiesOf(state: RunState, downNow: boolean, events: ContainerEventFact[], restarts: number): ContainerEventFact[] {
  return lastOf(diesOf(state, downNow, events).restarts, restarts);
}

/** The die events the inspect can show: the restarts', and the look's own (the death of a container down now). */
function diesOf(state: RunState, downNow: boolean, events: ContainerEventFact[]) {
  const dies = events.filter((e) => e.action === 'die' && e.atMs <= inspectHorizonMs(state, events));
  const look = downNow ? dieOf(state, dies, events) : undefined;
  return { restarts: look ? dies.filter((d) => d !== look) : dies, look };
}

/** The last `n` of `list` (none when n ≤ 0). */
function lastOf<T>(list: T[], n: number): T[] {
  return n <= 0 ? [] : list.slice(Math.max(0, list.length - n));
}

/** The last moment whose deaths the inspect can show. */
function inspectHorizonMs(state: RunState, events: ContainerEventFact[]): number {
  if (state.status === 'running' && state.startedAtMs !== null) return state.startedAtMs;
  if (state.status === 'restarting' && state.finishedAtMs !== null) {
    const died = state.finishedAtMs;
    return events.find((e) => e.action === 'start' && e.atMs > died)?.atMs ?? Infinity;
  }
  return Infinity;
}

/**
 * The die event that reports the exit the inspect shows, if the engine still has it: the first die from the exit on,
 * unless the engine started the container again before it (a later run's). No fixed lag: while dockerd shuts down,
 * its die events come seconds after the exits they report (2.6 s, seen by the soak), and a die taken for a restart's
 * would be counted as a death of its own.
 */
function dieOf(state: RunState, dies: ContainerEventFact[], events: ContainerEventFact[]): ContainerEventFact | undefined {
  const at = state.finishedAtMs;
  if (at === null) return undefined;
  const startedAgainMs = events.find((e) => e.action === 'start' && e.atMs > at)?.atMs ?? Infinity;
  return dies.find((d) => d.atMs >= at - DIE_EVENT_EARLY_MS && d.atMs < startedAgainMs);
}

/**
 * Deaths at keeper's first look at a container: the restarts whose die event (`restartDieTimesMs`, the matched
 * die events of the last RestartCount restarts, oldest first) falls after the baseline, plus, when the events of
 * older restarts are gone, those older ones if the old rule counts them; and a container that is down now, unless
 * the row already counted that death.
 */
export function deathsAtFirstSnapshot(
  f: FirstSnapshot,
  restartCount: number,
  restartDieTimesMs: number[],
  down: { now: boolean; atMs: number | null },
): number {
  const matched = restartDieTimesMs.slice(Math.max(0, restartDieTimesMs.length - restartCount));
  const dated = matched.filter((t) => t > f.countFromMs).length;
  const undated = restartCount - matched.length;
  // Restarts without events are older than every matched die: after the baseline only if the oldest one is.
  const undatedCount = f.countsUndated && dated === matched.length ? undated : 0;
  const downCounted = down.now && !(f.rowCrashed && down.atMs !== null && down.atMs <= f.countFromMs);
  return dated + undatedCount + (downCounted ? 1 : 0);
}
