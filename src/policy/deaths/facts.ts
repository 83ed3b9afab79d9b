/**
 * The facts of each death between two looks at a container, pure: which of them can still be had, and from
 * where. The engine tells a death three ways, and each keeps different facts:
 * - the inspect of a container that is down now (`look`): its State has the exit code, the OOM kill, the time
 *   of death, the engine's error and the dead run's start, all of them;
 * - a `die` event (`event`): the exit code and the time; an `oom` event before it tells an OOM kill, and the
 *   `start` events around it bound the dead run's output. The engine keeps events in memory only (the last
 *   256 of all kinds, none from before its own start), so events of older deaths may be gone;
 * - RestartCount alone (`restart-count`): Docker restarted the container and no event is left. For the most
 *   recent such death the inspect still has the time (FinishedAt) and the OOM kill (OOMKilled), but not the
 *   exit code: a running container's State.ExitCode reads 0 again (while `restarting` it still has it). Of
 *   older ones nothing is left but their number.
 * All times are unix milliseconds.
 */
import type { DeathFacts, LogWindow } from '../../contracts/reconcile';

/** An engine event about one container, as the tick reads them. */
export interface ContainerEventFact {
  action: 'die' | 'start' | 'kill' | 'oom';
  atMs: number;
  exitCode?: number;
  /** The signal a `kill` event sent, as the engine names it (a number, e.g. "15"). */
  signal?: string;
}

/** What the inspect says of the container's current (or, when it is down, last) run. */
export interface RunState {
  status: string;
  exitCode: number;
  oomKilled: boolean;
  /** The engine's own error for the run (e.g. a failed restart); '' when none. */
  error: string;
  startedAtMs: number | null;
  finishedAtMs: number | null;
  restartPolicy: string;
  /** When the health check made it unhealthy (the engine's health log); null when healthy or unknown. */
  unhealthySinceMs: number | null;
}

/** The log of a run is read back at most this far before its death: enough for its last lines. */
export const LOG_LOOKBACK_MS = 10 * 60_000;
/** Output the log copier drains after the exit can carry a time a little after it. */
const LOG_DRAIN_MS = 1_000;
/**
 * A run's first lines carry a time up to a few milliseconds before the StartedAt and the start event the
 * engine records after the process is already running (measured: 0.5-1.5 ms): its window opens this early,
 * but never before the previous run's death.
 */
const RUN_OUTPUT_LEAD_MS = 1_000;
/** The engine's die event follows the exit it reports by the time it takes to drain the output (≤ 2 s). */
const DIE_EVENT_LAG_MS = 5_000;
/**
 * The kernel's OOM kill reaches the engine as its own `oom` event, apart from the exit: under load it comes after
 * the `die`, and after the inspect that still says OOMKilled false (exit 137). One this soon after a death (or a
 * little before it) is that death's.
 */
export const OOM_EVENT_AFTER_DEATH_MS = 30_000;
const OOM_EVENT_BEFORE_DEATH_MS = 2_000;

/**
 * The facts of `deaths` deaths, oldest first. `downNow`: the last of them is the container's present state
 * (it is exited or dead); the others were restarts by Docker. `events` are this container's, since the
 * previous look, in time order (empty when they could not be read).
 */
export function factsOfDeaths(deaths: number, downNow: boolean, state: RunState, events: ContainerEventFact[]): DeathFacts[] {
  if (deaths <= 0) return [];
  const restarts = deaths - (downNow ? 1 : 0);
  const matched = restartDiesOf(state, downNow, events, restarts);
  const out: DeathFacts[] = [];
  for (let i = 0; i < restarts; i++) {
    const die = matched[i - (restarts - matched.length)];
    if (die) out.push(fromEvent(die, events));
    else out.push(i === restarts - 1 && !downNow ? fromLastRestart(state) : unknownDeath());
  }
  if (downNow) out.push(fromLook(state, events));
  return out;
}

/**
 * The die events of the container's last `restarts` restarts by Docker, oldest first: fewer when the engine no
 * longer has them all. Not the die of a container that is down now, and not a die after what the inspect shows
 * (the events are read after the inspect): one after a running container's start, or after the restart that
 * followed a restarting container's death.
 */
export function restartDiesOf(state: RunState, downNow: boolean, events: ContainerEventFact[], restarts: number): ContainerEventFact[] {
  if (restarts <= 0) return [];
  const dies = events.filter((e) => e.action === 'die' && e.atMs <= inspectHorizonMs(state, events));
  const lookDie = downNow ? dieOf(state, dies) : undefined;
  const restartDies = lookDie ? dies.filter((d) => d !== lookDie) : dies;
  return restartDies.slice(Math.max(0, restartDies.length - restarts));
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

/** How long each run lasted that ended in one of `dies`, when the engine still has the run's start event. */
export function runsEndingIn(dies: ContainerEventFact[], events: ContainerEventFact[]): number[] {
  const runs: number[] = [];
  for (const die of dies) {
    const bounds = events.filter((e) => e !== die && e.atMs <= die.atMs && (e.action === 'start' || e.action === 'die'));
    const last = bounds[bounds.length - 1];
    if (last?.action === 'start') runs.push(die.atMs - last.atMs);
  }
  return runs;
}

/** The die event that reports the exit the inspect shows, if the engine still has it. */
export function dieOf(state: RunState, dies: ContainerEventFact[]): ContainerEventFact | undefined {
  const at = state.finishedAtMs;
  if (at === null) return undefined;
  return dies.find((d) => d.atMs >= at - 100 && d.atMs <= at + DIE_EVENT_LAG_MS);
}

function fromLook(state: RunState, events: ContainerEventFact[]): DeathFacts {
  const died = state.finishedAtMs;
  const since = state.startedAtMs !== null ? state.startedAtMs - RUN_OUTPUT_LEAD_MS : died === null ? null : died - LOG_LOOKBACK_MS;
  return {
    seenBy: 'look',
    diedAtMs: died,
    exitCode: state.exitCode,
    oomKilled: state.oomKilled || oomEventOf(events, state.startedAtMs, died),
    engineError: state.error,
    logWindow: died === null || since === null ? null : window(since, died + LOG_DRAIN_MS, died),
  };
}

function fromEvent(die: ContainerEventFact, events: ContainerEventFact[]): DeathFacts {
  const before = events.filter((e) => e.atMs <= die.atMs);
  const previousDeath =
    lastOf(
      before.filter((e) => e !== die),
      'die',
    )?.atMs ?? null;
  const runStart = lastOf(before, 'start')?.atMs ?? previousDeath;
  const oomKilled = before.some((e) => e.action === 'oom' && (runStart === null || e.atMs >= runStart));
  const since = runStart === null ? die.atMs - LOG_LOOKBACK_MS : Math.max(runStart - RUN_OUTPUT_LEAD_MS, (previousDeath ?? -Infinity) + 1);
  // The engine sends die once the run's output is drained: nothing of this run is later, and the next run's
  // first lines (which precede its start event) are not yet written.
  return {
    seenBy: 'event',
    diedAtMs: die.atMs,
    exitCode: die.exitCode ?? null,
    oomKilled,
    engineError: '',
    logWindow: window(since, die.atMs + 1, die.atMs),
  };
}

/** An `oom` event of the run that started at `startedAtMs` and died at `diedAtMs` (the engine may send it after the die). */
function oomEventOf(events: ContainerEventFact[], startedAtMs: number | null, diedAtMs: number | null): boolean {
  if (diedAtMs === null) return false;
  const from = startedAtMs ?? diedAtMs - OOM_EVENT_BEFORE_DEATH_MS;
  return events.some((e) => e.action === 'oom' && e.atMs >= from && e.atMs <= diedAtMs + OOM_EVENT_AFTER_DEATH_MS);
}

/**
 * Which recorded deaths an `oom` event confirms as OOM kills: each event goes to the nearest death of its container
 * that it can belong to (from a little before it to OOM_EVENT_AFTER_DEATH_MS after), one death per event.
 */
export function oomConfirmed(
  deaths: { id: number; containerId: string; diedAtMs: number }[],
  ooms: { containerId: string; atMs: number }[],
): number[] {
  const confirmed = new Set<number>();
  for (const oom of ooms) {
    const near = deaths
      .filter((d) => !confirmed.has(d.id) && oom.containerId.startsWith(d.containerId))
      .filter((d) => oom.atMs >= d.diedAtMs - OOM_EVENT_BEFORE_DEATH_MS && oom.atMs <= d.diedAtMs + OOM_EVENT_AFTER_DEATH_MS)
      .sort((a, b) => Math.abs(oom.atMs - a.diedAtMs) - Math.abs(oom.atMs - b.diedAtMs));
    if (near[0]) confirmed.add(near[0].id);
  }
  return [...confirmed];
}

/** Docker restarted it and its event is gone: the inspect keeps the time and the OOM kill of the last death. */
function fromLastRestart(state: RunState): DeathFacts {
  const died = state.finishedAtMs;
  const until = state.status === 'running' && state.startedAtMs !== null ? state.startedAtMs : died === null ? null : died + LOG_DRAIN_MS;
  return {
    seenBy: 'restart-count',
    diedAtMs: died,
    exitCode: state.status === 'restarting' ? state.exitCode : null,
    oomKilled: state.oomKilled,
    engineError: '',
    logWindow: died === null || until === null ? null : window(died - LOG_LOOKBACK_MS, until, died),
  };
}

function unknownDeath(): DeathFacts {
  return { seenBy: 'restart-count', diedAtMs: null, exitCode: null, oomKilled: null, engineError: '', logWindow: null };
}

/** A run's output window, never reaching back more than LOG_LOOKBACK_MS before its death. */
function window(sinceMs: number, untilMs: number, diedAtMs: number): LogWindow {
  return { sinceMs: Math.max(sinceMs, diedAtMs - LOG_LOOKBACK_MS), untilMs: Math.max(untilMs, diedAtMs) };
}

function lastOf(events: ContainerEventFact[], action: ContainerEventFact['action']): ContainerEventFact | undefined {
  for (let i = events.length - 1; i >= 0; i--) if (events[i].action === action) return events[i];
  return undefined;
}
