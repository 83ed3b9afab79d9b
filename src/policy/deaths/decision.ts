/**
 * Step 8 of a death's story (index.ts), the last: the decision, pure. recordCrash (src/db/services.ts) takes it
 * inside its transaction, with the service row's own counters, and applies it: which deaths count (an exit the
 * service expects is recorded, not counted), the window and the threshold applied at each death's own time, and
 * at the threshold the circuit's opening, its escalation and its retry time (the backoff by escalation, which
 * decays). The host's crash policy comes from its settings (crashPolicy); a service's labels may set its own.
 * All times are unix seconds.
 */
import type { Settings } from '../../settings';
import type { CountedDeath, CrashPolicy, CrashRecord } from '../../contracts/reconcile';
import { isExpectedExit } from '../service-crash-policy';

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

/** What the service row holds when its crash is recorded: what the decision starts from. */
export interface RowCounters extends CrashCounters {
  /** circuit_open_count: the escalation the next opening escalates from. */
  escalation: number;
  /** When keeper last opened this service's circuit; null when it never did. */
  lastOpenedAt: number | null;
}

/** What recording the crash writes. */
export interface CrashDecision {
  /** Each death, oldest first, marked `expected` when the service expects its exit code (recorded, not counted). */
  deaths: CountedDeath[];
  /** The deaths counted: the crash's, less the expected ones. None: only expected exits, the counters stay. */
  counted: number;
  /** The row's counters after the counted deaths. */
  counters: CrashCounters;
  /** The window each death was counted in (its start); an expected exit takes the window current at the end. */
  windowStarts: number[];
  /** The circuit opens: at the threshold. */
  opening?: CircuitOpening;
  /** The policy the deaths were counted by: the service's own (its labels), else the host's. */
  policy: CrashPolicy;
}

/** The decision on crash `c` seen at `now`, from the row's counters `row`. */
export function crashDecision(row: RowCounters, c: CrashRecord, now: number, hostPolicy: CrashPolicy): CrashDecision {
  const deaths = withExpected(c.facts ?? Array.from({ length: c.deaths }, unknownDeath), c.rules?.expectedExitCodes ?? []);
  const counted = c.deaths - deaths.filter((d) => d.expected).length;
  const policy = c.rules?.policy ?? hostPolicy;
  const before: CrashCounters = { crashCount: row.crashCount, windowStart: row.windowStart };
  if (counted <= 0) return { deaths, counted, counters: before, windowStarts: deaths.map(() => row.windowStart ?? now), policy };
  const { counters, windowStarts, reached } = countDeathsAtTheirTimes(before, deaths, now, policy);
  const opening = reached ? openingAt(row.escalation, row.lastOpenedAt, now, policy) : undefined;
  return { deaths, counted, counters, windowStarts, ...(opening && { opening }), policy };
}

/** Marks the deaths whose exit code the service expects. */
function withExpected(deaths: CountedDeath[], expectedExitCodes: number[]): CountedDeath[] {
  return deaths.map((d) => (isExpectedExit(d.exitCode, expectedExitCodes) ? { ...d, expected: true } : d));
}

/** A death an observation made before crash forensics reports: only its number is known. */
function unknownDeath(): CountedDeath {
  return { seenBy: 'restart-count', diedAtMs: null, exitCode: null, oomKilled: null, engineError: '', logWindow: null };
}

/**
 * The window and threshold applied at each counted death's own time (its dated diedAtMs; `now` for a death an
 * older observation left undated). Expected exits are not counted: they take the window current at the end.
 */
function countDeathsAtTheirTimes(before: CrashCounters, deaths: CountedDeath[], now: number, policy: CrashPolicy): DatedCount {
  const atSec = (d: CountedDeath) => (d.datedBy && d.diedAtMs !== null ? Math.floor(d.diedAtMs / 1000) : now);
  const countedOnes = deaths
    .map((d, i) => ({ d, i }))
    .filter(({ d }) => !d.expected)
    .sort((a, b) => atSec(a.d) - atSec(b.d));
  const dated = countDatedCrashes(
    before,
    countedOnes.map(({ d }) => atSec(d)),
    policy,
  );
  const windowStarts = deaths.map(() => dated.counters.windowStart as number);
  countedOnes.forEach(({ i }, k) => (windowStarts[i] = dated.windowStarts[k]));
  return { ...dated, windowStarts };
}
