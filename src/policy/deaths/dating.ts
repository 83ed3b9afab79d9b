/**
 * Step 6 of a death's story (index.ts): when each counted death happened, pure. The crash window and threshold are
 * applied to these times, not to the moment keeper looks, so deaths found after an absence (a worker upgrade, a
 * host reboot, a Temporal outage) are counted where they fell. How a death was dated:
 * - `live`: keeper looked within LIVE_LAG_MS of the death, which has its own time (die event or run times);
 * - `event`: the engine's replayed die event since keeper's last snapshot;
 * - `run-times`: the container's State.FinishedAt (the run that is down now, or the last run Docker restarted);
 * - `spread`: nothing of its time survived (the engine's event buffer rolled over, or the engine restarted):
 *   such deaths are placed inside the part of the unseen interval they must lie in, as Docker's restart backoff
 *   lays a loop's deaths out (restartLoopOf, placeByBackoff), or evenly when that model does not fit; never
 *   bunched at "now".
 * All times are unix milliseconds.
 */
import type { CountedDeath, DatedBy, DeathFacts } from '../../contracts/reconcile';
import { exponentialBackoff } from '../backoff';
import type { CountedDeaths } from './counted';
import type { ContainerEventFact } from './evidence';
import type { ShownDeaths } from './shown';

export type { DatedBy };

/** A death keeper sees this soon after it happened was seen as it happened. */
export const LIVE_LAG_MS = 60_000;

// Docker's restart manager (moby `restartmanager`): before each restart it waits a delay that starts at 100 ms
// and doubles while each run lasts under 10 s, returns to 100 ms after a run of 10 s or more, and is capped at
// one minute. RestartCount counts the restarts since the container's last manual start, where the delay starts
// over too.
export const RESTART_DELAY_FIRST_MS = 100;
export const RESTART_DELAY_MAX_MS = 60_000;
/** A run this long resets the restart delay to RESTART_DELAY_FIRST_MS. */
export const BACKOFF_RESET_RUN_MS = 10_000;

/** What keeper did not see: from its last snapshot of the container (or the container's creation) to this one. */
export interface UnseenInterval {
  sinceMs: number;
  untilMs: number;
}

export type Dated<T> = T & { diedAtMs: number; datedBy: DatedBy };

/**
 * The `deaths` (the counted ones, after the engine-stop hold) with their times: inside what keeper did not see,
 * from `shown.sinceMs` to `nowMs`, placed by the restart loop the inspect and the events show.
 */
export function datedDeaths(
  deaths: CountedDeath[],
  shown: ShownDeaths,
  counted: CountedDeaths,
  events: ContainerEventFact[],
  nowMs: number,
): Dated<CountedDeath>[] {
  const run = shown.evidence.inspected?.run;
  const restarts = counted.deaths - (counted.downNow ? 1 : 0);
  // How Docker restarted the container between the counted deaths: what places those that kept no time.
  const loop =
    run && counted.deaths > 0
      ? restartLoopOf({
          status: run.status,
          startedAtMs: run.startedAtMs,
          finishedAtMs: run.finishedAtMs,
          restartCount: shown.evidence.current.restartCount,
          restarts,
          eventRunsMs: runsEndingIn(counted.restartDies, events),
        })
      : undefined;
  return dateDeaths(deaths, { sinceMs: shown.sinceMs, untilMs: nowMs }, loop);
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

/**
 * How Docker restarted the container between the deaths being dated (restartLoopOf): what places deaths that
 * kept no time of their own.
 */
export interface RestartLoop {
  /** The number of the first death being dated, counted from the container's last manual start (1 = its first). */
  firstDeathNumber: number;
  /** Runs under BACKOFF_RESET_RUN_MS: each restart waited twice as long as the one before. Else 100 ms each. */
  dense: boolean;
  /** The run time the model gives every run; null: unknown, the longest that keeps the deaths inside their gap. */
  runMs: number | null;
}

/** The delay before the restart that follows death `n` (n ≥ 1) of a dense loop that began at the last manual start. */
export function restartDelayMs(n: number): number {
  return exponentialBackoff(n, RESTART_DELAY_FIRST_MS, RESTART_DELAY_MAX_MS);
}

/** What the inspect and the engine's events tell of the loop that made the deaths. */
export interface LoopEvidence {
  /** The inspect's State: status, StartedAt, FinishedAt, and RestartCount. */
  status: string;
  startedAtMs: number | null;
  finishedAtMs: number | null;
  restartCount: number;
  /** How many of the deaths being dated are restarts by Docker (the first ones; a death that left the container down, or a failed health check, may follow). */
  restarts: number;
  /** Runs the engine's events show, from a start event to the next die event, of the deaths being dated. */
  eventRunsMs: number[];
}

/**
 * The restart loop the evidence shows, or undefined when it shows none (the deaths are then placed evenly, the
 * placement least likely to put many in one window). The model's run time is the longest run the evidence shows:
 * the runs that ended in dated deaths (events), and the last run of a container that is down or restarting
 * (FinishedAt − StartedAt). A running container shows only its last restart delay (StartedAt − FinishedAt):
 * when that delay is about what an unbroken dense loop would have waited, the loop is taken as dense and its run
 * time as unknown; when it is much shorter, a long run broke the loop somewhere, and no model is claimed.
 */
export function restartLoopOf(e: LoopEvidence): RestartLoop | undefined {
  if (e.restarts <= 0) return undefined;
  const firstDeathNumber = Math.max(1, e.restartCount - e.restarts + 1);
  const { startedAtMs: started, finishedAtMs: finished } = e;
  const timed = started !== null && finished !== null;
  if (e.status === 'running' && timed && started - finished < restartDelayMs(e.restartCount) / 2) return undefined;
  const runs = [...e.eventRunsMs];
  if (e.status !== 'running' && timed && finished >= started) runs.push(finished - started);
  if (runs.length > 0) {
    const runMs = Math.max(...runs);
    return { firstDeathNumber, dense: runMs < BACKOFF_RESET_RUN_MS, runMs };
  }
  return e.status === 'running' && timed ? { firstDeathNumber, dense: true, runMs: null } : undefined;
}

/** A run of deaths with no time, between two known moments. */
interface Gap {
  fromMs: number;
  /** `fromMs` is a death (a restart delay and a run separate it from the first death of the gap), not a look. */
  fromIsDeath: boolean;
  toMs: number;
  /** The deaths' numbers since the last manual start, oldest first. */
  numbers: number[];
}

/**
 * The gap's deaths as Docker's restart backoff lays them out, placed back from the gap's end (the next dated
 * death, whose run followed the last of them): between death n and the next, the restart delay after n and one
 * run. Null when the model does not fit inside the gap: the loop was not what the evidence suggested (a long run
 * reset the delay, an engine restart started it over), and the caller places the deaths evenly.
 */
export function placeByBackoff(gap: Gap, loop: RestartLoop): number[] | null {
  const delayAfter = (n: number) => (loop.dense ? restartDelayMs(n) : RESTART_DELAY_FIRST_MS);
  const delays = gap.numbers.map(delayAfter);
  const leadMs = gap.fromIsDeath ? delayAfter(gap.numbers[0] - 1) : 0;
  const runs = gap.numbers.length + (gap.fromIsDeath ? 1 : 0);
  // The longest run time with which the deaths stay inside the gap.
  const fitMs = (gap.toMs - gap.fromMs - leadMs - delays.reduce((a, b) => a + b, 0)) / runs;
  const runMs = loop.runMs ?? Math.min(fitMs, BACKOFF_RESET_RUN_MS - 1);
  if (runMs < 0 || runMs > fitMs) return null;
  const out: number[] = [];
  let at = gap.toMs;
  for (let i = delays.length - 1; i >= 0; i--) {
    at -= delays[i] + runMs;
    out[i] = Math.round(at);
  }
  return out;
}

/** `count` deaths evenly inside (fromMs, toMs), never at either end. */
function placeEvenly(count: number, fromMs: number, toMs: number): number[] {
  return Array.from({ length: count }, (_, k) => Math.round(fromMs + ((toMs - fromMs) * (k + 1)) / (count + 1)));
}

/** How a death with a known time was dated. */
function methodOf(f: DeathFacts, diedAtMs: number, untilMs: number): DatedBy {
  if (f.seenBy === 'health-check' || untilMs - diedAtMs <= LIVE_LAG_MS) return 'live';
  return f.seenBy === 'event' ? 'event' : 'run-times';
}

/**
 * Each death with its time and how it was dated, in the given order (oldest first). A run of deaths without a
 * time lies between its dated neighbours (or the interval's ends): its deaths are placed inside that gap, by the
 * restart loop when one is given and fits, else evenly.
 */
export function dateDeaths<T extends DeathFacts>(deaths: T[], unseen: UnseenInterval, loop?: RestartLoop): Dated<T>[] {
  const untilMs = Math.max(unseen.untilMs, unseen.sinceMs);
  const out: Dated<T>[] = [];
  let i = 0;
  while (i < deaths.length) {
    const known = deaths[i].diedAtMs;
    if (known !== null) {
      const at = Math.min(known, untilMs);
      out.push({ ...deaths[i], diedAtMs: at, datedBy: methodOf(deaths[i], at, untilMs) });
      i++;
      continue;
    }
    let end = i;
    while (end < deaths.length && deaths[end].diedAtMs === null) end++;
    const fromIsDeath = out.length > 0;
    const fromMs = fromIsDeath ? out[out.length - 1].diedAtMs : unseen.sinceMs;
    const nextKnown = end < deaths.length ? Math.min(deaths[end].diedAtMs as number, untilMs) : untilMs;
    const toMs = Math.max(nextKnown, fromMs);
    const numbers = Array.from({ length: end - i }, (_, k) => (loop?.firstDeathNumber ?? 1) + i + k);
    const placed = (loop && placeByBackoff({ fromMs, fromIsDeath, toMs, numbers }, loop)) ?? placeEvenly(end - i, fromMs, toMs);
    placed.forEach((at, k) => out.push({ ...deaths[i + k], diedAtMs: at, datedBy: 'spread' }));
    i = end;
  }
  return out;
}
