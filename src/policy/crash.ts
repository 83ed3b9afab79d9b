/**
 * Crash rules, pure: the window, the threshold, the circuit backoff by escalation, escalation decay, and
 * how many deaths lie between two snapshots of a container. Workflows, activities and tests share them.
 * All times are unix seconds.
 */
import type { Settings } from '../settings';
import type { ContainerSnapshot, CrashPolicy } from '../contracts/reconcile';

export function crashPolicy(s: Pick<Settings, 'crashWindowMs' | 'crashThreshold' | 'circuitBackoffMs' | 'escalationDecayMs'>): CrashPolicy {
  const sec = (ms: number) => Math.round(ms / 1000);
  return {
    windowSec: sec(s.crashWindowMs),
    threshold: s.crashThreshold,
    backoffSec: s.circuitBackoffMs.map(sec),
    decaySec: sec(s.escalationDecayMs),
  };
}

/** The retry delay at escalation `escalation` (1 = the first opening since it last decayed). ah: 30m, 1h, then 4h. */
export function backoffFor(escalation: number, backoffSec: number[]): number {
  const i = Math.min(Math.max(escalation, 1), backoffSec.length) - 1;
  return backoffSec[i];
}

export interface CrashCounters {
  crashCount: number;
  windowStart: number | null;
}

/**
 * Adds `deaths` crashes seen at `now`. The first crash of a new window (none yet, or the old one at least
 * windowSec old) restarts the count at the deaths seen at once; later crashes add.
 */
export function countCrashes(c: CrashCounters, deaths: number, now: number, windowSec: number): CrashCounters {
  const fresh = c.windowStart === null || now - c.windowStart >= windowSec;
  return fresh ? { crashCount: deaths, windowStart: now } : { crashCount: c.crashCount + deaths, windowStart: c.windowStart };
}

/** The circuit opens at the threshold, counted inside a window that is still current. */
export function reachesThreshold(c: CrashCounters, now: number, p: CrashPolicy): boolean {
  return c.windowStart !== null && now - c.windowStart < p.windowSec && c.crashCount >= p.threshold;
}

export interface DatedCount {
  counters: CrashCounters;
  /** The window each death was counted in (its start), in the order given. */
  windowStarts: number[];
  /** Some window, at the time of one of these deaths, held the threshold. */
  reached: boolean;
}

/**
 * Adds deaths at the times they happened (unix seconds), oldest first, each by countCrashes' rule at its own time,
 * so a window holds only the deaths that really fell inside it. The threshold is checked after each death, so a
 * dense loop that ended while keeper was away still reaches it, and a slow one never does.
 */
export function countDatedCrashes(c: CrashCounters, deathTimesSec: number[], p: Pick<CrashPolicy, 'windowSec' | 'threshold'>): DatedCount {
  let counters = c;
  let reached = false;
  const windowStarts: number[] = [];
  for (const at of deathTimesSec) {
    // Once a window held the threshold the circuit opens on it: later deaths join that window, so the row's
    // count and the deaths recorded with its window are those of the opening, not of a newer, quieter window.
    counters = reached ? { ...counters, crashCount: counters.crashCount + 1 } : countCrashes(counters, 1, at, p.windowSec);
    windowStarts.push(counters.windowStart as number);
    if (counters.crashCount >= p.threshold) reached = true;
  }
  return { counters, windowStarts, reached };
}

/**
 * The escalation an opening escalates from (ah's circuit_open_count). After decaySec without an opening keeper
 * recorded, escalation starts over. An escalation inherited from ah, with no known opening time, stands.
 */
export function decayedEscalation(escalation: number, lastOpenedAt: number | null, now: number, decaySec: number): number {
  if (lastOpenedAt === null) return escalation;
  return now - lastOpenedAt >= decaySec ? 0 : escalation;
}

export interface CircuitOpening {
  /** The escalation this opening makes: it picked the backoff. (The opening's own number is the DB's: db/circuit-openings.ts.) */
  escalation: number;
  retryAt: number;
}

/** What opening the circuit writes: the next escalation and its retry time. */
export function openingAt(escalation: number, lastOpenedAt: number | null, now: number, p: CrashPolicy): CircuitOpening {
  const next = decayedEscalation(escalation, lastOpenedAt, now, p.decaySec) + 1;
  return { escalation: next, retryAt: now + backoffFor(next, p.backoffSec) };
}

// ---- deaths between two snapshots ----

/** A container that is not running now and that Docker will not bring back by itself counts as a death. */
export function isDown(state: string): boolean {
  return state === 'exited' || state === 'dead' || state === 'missing';
}

/**
 * Deaths between two snapshots of the same container, `previous` and `current`. Docker increments RestartCount each
 * time its restart policy restarts the container (it enters `restarting` already incremented), and a manual
 * start resets it to 0; a container that is down now and was not before died once more.
 *
 * With no earlier snapshot, this is the rule for when no die event can be had (deathsAtFirstSnapshot dates them first):
 * only deaths known to be recent count, the container's whole RestartCount if it was created inside the window
 * (all those restarts happened inside it), otherwise just a down container.
 */
export function deathsBetween(
  previous: ContainerSnapshot | null,
  current: ContainerSnapshot,
  createdAtSec: number,
  nowSec: number,
  windowSec: number,
): number {
  const downNow = isDown(current.state) ? 1 : 0;
  if (!previous || previous.containerId !== current.containerId) {
    const recent = nowSec - createdAtSec < windowSec;
    return (recent ? current.restartCount : 0) + downNow;
  }
  const restarts = current.restartCount >= previous.restartCount ? current.restartCount - previous.restartCount : current.restartCount;
  return Math.max(0, restarts + downNow - (isDown(previous.state) ? 1 : 0));
}

// ---- keeper's first snapshot of a container ----

/** What keeper's first snapshot of a container takes as already seen, and what it may count. */
export interface FirstSnapshot {
  /**
   * Deaths up to this moment are the baseline: before the container existed, before keeper ran on this state DB
   * (ah's to count, and its row holds what it counted), or already counted on the service row (a crash window
   * inherited from ah or from an earlier keeper: its last crash, its window's start, keeper's own records of this
   * container). Later ones are counted, each dated by its die event.
   */
  countFromMs: number;
  /**
   * Restarts whose die events are gone (the engine restarted, its 256-event buffer rolled over) count too: the
   * old first-look rule, for a container created inside the window with nothing counted since.
   */
  countsUndated: boolean;
  /** The row already shows the service crashed, so a container down since before countFromMs was counted then. */
  rowCrashed: boolean;
}

/** What the service row and keeper's records say was counted before; unix seconds, null when never. */
export interface CountedBefore {
  status: string;
  lastCrashedAt: unknown;
  crashWindowStart: unknown;
  lastRecordedAt: number | null;
  /** When a keeper worker first started on this state DB; null when none has. */
  keeperArrivedAt: number | null;
}

/** A time column as unix seconds; a value that is no time (a bad row) counts as "up to now": nothing is counted twice. */
function counted(v: unknown, nowSec: number): number | null {
  if (v === null || v === undefined) return null;
  return typeof v === 'number' && Number.isFinite(v) ? v : nowSec;
}

/** The baseline of keeper's first snapshot of a container created at `createdAtSec`, with the service's window. */
export function firstSnapshotOf(createdAtSec: number, row: CountedBefore, nowSec: number, windowSec: number): FirstSnapshot {
  const marks = [row.lastCrashedAt, row.crashWindowStart, row.lastRecordedAt].map((v) => counted(v, nowSec));
  // Counted at a whole second: any death up to the end of that second may have been counted then.
  const countedUntilMs = Math.max(...marks.map((m) => (m === null ? -Infinity : (m + 1) * 1000)));
  const createdAtMs = createdAtSec * 1000;
  const countFromMs = Math.max(createdAtMs, countedUntilMs, (row.keeperArrivedAt ?? -Infinity) * 1000);
  return {
    countFromMs,
    countsUndated: nowSec - createdAtSec < windowSec && countFromMs === createdAtMs,
    rowCrashed: row.status === 'crashed',
  };
}

/**
 * Deaths at keeper's first snapshot of a container: the restarts whose die event (`restartDieTimesMs`, the matched
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
