/**
 * Step 3 of a death's story (index.ts), with the engine's events: which deaths count, and which die event is whose.
 * The events are read after the inspect, so some may be of deaths the inspect does not show yet; the die of a
 * container down now is the look's death, the others were Docker's restarts. At keeper's first look at a container,
 * only the restarts whose die event falls after its baseline count (and, when the events of older ones are gone,
 * those too if the old rule counts them). All times are unix milliseconds.
 */
import type { ContainerEventFact, RunState } from './evidence';
import type { FirstSnapshot, ShownDeaths } from './shown';

/** The engine's die event follows the exit it reports by the time it takes to drain the output (≤ 2 s). */
const DIE_EVENT_LAG_MS = 5_000;

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
}

/** The deaths `shown` counts, with this container's `events` since the look before (oldest first). */
export function deathsCounted(shown: ShownDeaths, events: ContainerEventFact[]): CountedDeaths {
  const run = shown.evidence.inspected?.run;
  const { downNow } = shown;
  if (!run) return { deaths: shown.deaths, downNow, restartDies: [] };
  const dies = diesOf(run, downNow, events);
  const restartCount = shown.evidence.current.restartCount;
  const deaths = shown.firstLook
    ? deathsAtFirstSnapshot(
        shown.firstLook,
        restartCount,
        lastOf(dies.restarts, restartCount).map((d) => d.atMs),
        { now: downNow, atMs: run.finishedAtMs },
      )
    : shown.deaths;
  const restartDies = lastOf(dies.restarts, deaths - (downNow ? 1 : 0));
  return { deaths, downNow, restartDies, ...(dies.look && { lookDie: dies.look }) };
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
  const look = downNow ? dieOf(state, dies) : undefined;
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

/** The die event that reports the exit the inspect shows, if the engine still has it. */
function dieOf(state: RunState, dies: ContainerEventFact[]): ContainerEventFact | undefined {
  const at = state.finishedAtMs;
  if (at === null) return undefined;
  return dies.find((d) => d.atMs >= at - 100 && d.atMs <= at + DIE_EVENT_LAG_MS);
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
