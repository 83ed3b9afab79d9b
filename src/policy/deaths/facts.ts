/**
 * Step 4 of a death's story (index.ts): the facts of each counted death, and which of them can still be had, from
 * where. The engine tells a death three ways, and each keeps different facts:
 * - the inspect of a container that is down now (`look`): its State has the exit code, the OOM kill, the time
 *   of death, the engine's error and the dead run's start, all of them;
 * - a `die` event (`event`): the exit code and the time; an `oom` event before it tells an OOM kill, and the
 *   `start` events around it bound the dead run's output. The events of older deaths may be gone;
 * - RestartCount alone (`restart-count`): Docker restarted the container and no event is left. For the most
 *   recent such death the inspect still has the time (FinishedAt) and the OOM kill (OOMKilled), but not the
 *   exit code: a running container's State.ExitCode reads 0 again (while `restarting` it still has it). Of
 *   older ones nothing is left but their number.
 * A container that is gone (`missing`) keeps nothing, and a failed health check (`health-check`) is a death of a
 * run still alive. All times are unix milliseconds.
 */
import type { CountedDeath, DeathFacts, LogWindow } from '../../contracts/reconcile';
import type { CountedDeaths } from './counted';
import { OOM_EVENT_AFTER_DEATH_MS, OOM_EVENT_BEFORE_DEATH_MS, type ContainerEventFact, type RunState } from './evidence';
import type { ShownDeaths } from './shown';

/** The log of a run is read back at most this far before its death: enough for its last lines. */
const LOG_LOOKBACK_MS = 10 * 60_000;
/** Output the log copier drains after the exit can carry a time a little after it. */
const LOG_DRAIN_MS = 1_000;
/**
 * A run's first lines carry a time up to a few milliseconds before the StartedAt and the start event the
 * engine records after the process is already running (measured: 0.5-1.5 ms): its window opens this early,
 * but never before the previous run's death.
 */
const RUN_OUTPUT_LEAD_MS = 1_000;

/** A container that is gone (404): nothing of its death is left to read. */
const MISSING: CountedDeath = { seenBy: 'missing', diedAtMs: null, exitCode: null, oomKilled: null, engineError: '', logWindow: null };

/** The facts of the deaths `counted`, oldest first, and the failed health check's last (at `nowMs`). */
export function deathFacts(counted: CountedDeaths, shown: ShownDeaths, events: ContainerEventFact[], nowMs: number): CountedDeath[] {
  const run = shown.evidence.inspected?.run;
  if (!run) return Array<CountedDeath>(counted.deaths).fill(MISSING);
  const facts = factsOfDeaths(counted, run, events);
  return shown.unhealthy ? [...facts, healthCheckDeath(run, nowMs)] : facts;
}

/**
 * The facts of the `counted` deaths of a container whose last run `state` shows, oldest first. `downNow`: the
 * last of them is the container's present state (it is exited or dead); the others were restarts by Docker, whose
 * die events the engine still has are `restartDies`. `events` are this container's, since the previous look, in
 * time order (empty when they could not be read).
 */
export function factsOfDeaths(
  { deaths, downNow, restartDies: matched }: Pick<CountedDeaths, 'deaths' | 'downNow' | 'restartDies'>,
  state: RunState,
  events: ContainerEventFact[],
): DeathFacts[] {
  if (deaths <= 0) return [];
  const restarts = deaths - (downNow ? 1 : 0);
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
