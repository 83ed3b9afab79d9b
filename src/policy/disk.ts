/**
 * The disk guard's rule, pure: usage per path becomes ok, warn or block, with messages that name the path
 * and the usage. A path that cannot be measured is never skipped silently (W-D1): it is reported as
 * `unknown`, which warns but does not block.
 */
import type { DiskPathVerdict, DiskVerdict } from '../contracts/disk';

export interface DiskUsage {
  path: string;
  /** Why this path is guarded: the DB's directory, Docker's root dir, or a --disk-paths entry. */
  role: string;
  totalBytes?: number;
  freeBytes?: number;
  /** Set when the path could not be measured. */
  error?: string;
}

export function usedPercent(totalBytes: number, freeBytes: number): number {
  if (totalBytes <= 0) return 0;
  return ((totalBytes - freeBytes) / totalBytes) * 100;
}

const pct = (n: number) => `${n.toFixed(1)}%`;

export function judgePath(u: DiskUsage, warnAt: number, blockAt: number): DiskPathVerdict {
  if (u.error !== undefined || u.totalBytes === undefined || u.freeBytes === undefined) {
    return {
      path: u.path,
      role: u.role,
      level: 'unknown',
      usedPercent: null,
      totalBytes: null,
      freeBytes: null,
      message: `disk usage at ${u.path} (${u.role}) is unknown: ${u.error ?? 'not measured'}`,
    };
  }
  const used = usedPercent(u.totalBytes, u.freeBytes);
  const base = { path: u.path, role: u.role, usedPercent: Math.round(used * 10) / 10, totalBytes: u.totalBytes, freeBytes: u.freeBytes };
  if (used >= blockAt) {
    return {
      ...base,
      level: 'block',
      message: `insufficient disk space at ${u.path} (${u.role}): ${pct(used)} used, block threshold ${blockAt}%`,
    };
  }
  if (used >= warnAt) {
    return {
      ...base,
      level: 'warn',
      message: `disk usage at ${u.path} (${u.role}): ${pct(used)} used, above warning threshold ${warnAt}%`,
    };
  }
  return { ...base, level: 'ok', message: `disk usage at ${u.path} (${u.role}): ${pct(used)} used` };
}

export function judgeDisk(usages: DiskUsage[], warnAt: number, blockAt: number): DiskVerdict {
  const paths = usages.map((u) => judgePath(u, warnAt, blockAt));
  const blocking = paths.filter((p) => p.level === 'block');
  const warning = paths.filter((p) => p.level === 'warn' || p.level === 'unknown');
  const level = blocking.length > 0 ? 'block' : warning.length > 0 ? 'warn' : 'ok';
  const flagged = blocking.length > 0 ? blocking : warning;
  const message = flagged.length > 0 ? flagged.map((p) => p.message).join('; ') : 'disk ok';
  return { level, warnAt, blockAt, paths, message, flaggedPaths: flagged.map((p) => p.path) };
}

// ---- disk pressure: a path at the block threshold requests a GC sweep, and holds the pool's block ----

/** What the disk watcher remembers between checks. */
export interface DiskPressureState {
  /** Some path was at the block threshold at the last check. */
  atBlock: boolean;
  /** A sweep was requested since this crossing began. */
  swept: boolean;
  /** When the last sweep was requested (ms), or null. */
  lastSweepAtMs: number | null;
}

export const NO_DISK_PRESSURE: DiskPressureState = { atBlock: false, swept: false, lastSweepAtMs: null };

const atBlock = (v: DiskVerdict) => v.paths.some((p) => p.level === 'block');
/** A measured path at or above the warning threshold; an unmeasured one holds nothing. */
const atWarn = (v: DiskVerdict) => v.paths.some((p) => p.level === 'block' || p.level === 'warn');

/**
 * One check of the watcher: a crossing of the block threshold requests one GC sweep, at once unless the last
 * one was requested less than `cooldownMs` ago (then once the cooldown is over, if still at block). A path
 * that stays at block requests no more: the gc schedule sweeps it on its interval, and a new crossing requests again.
 */
export function diskPressureStep(
  prev: DiskPressureState,
  verdict: DiskVerdict,
  nowMs: number,
  cooldownMs: number,
): { next: DiskPressureState; sweep: boolean } {
  if (!atBlock(verdict)) return { next: { atBlock: false, swept: false, lastSweepAtMs: prev.lastSweepAtMs }, sweep: false };
  const swept = prev.atBlock ? prev.swept : false;
  const cooled = prev.lastSweepAtMs === null || nowMs - prev.lastSweepAtMs >= cooldownMs;
  if (swept || !cooled) return { next: { atBlock: true, swept, lastSweepAtMs: prev.lastSweepAtMs }, sweep: false };
  return { next: { atBlock: true, swept: true, lastSweepAtMs: nowMs }, sweep: true };
}

/**
 * The pool's hold: set when a path reaches the block threshold, kept while any measured path is at or above
 * the warning threshold, cleared once every one is under it. So a sweep that frees a little does not let the
 * pool fill the disk straight back to the block.
 */
export function nextPoolHold(held: boolean, verdict: DiskVerdict): boolean {
  return atBlock(verdict) || (held && atWarn(verdict));
}

/** The verdict the pool refill obeys: a held block stays a block until every path is under the warning threshold. */
export function withPoolHold(verdict: DiskVerdict, held: boolean): DiskVerdict {
  if (!held || verdict.level === 'block') return verdict;
  const message = `${verdict.message}; held since a path reached the block threshold ${verdict.blockAt}%, until every path is under ${verdict.warnAt}%`;
  return { ...verdict, level: 'block', message };
}

/** The pool hold as a reported condition (logged once when set, once when cleared; kept per host in the state DB). */
export const POOL_HOLD_SUBJECT = 'pool-hold';

export function poolHoldCondition(verdict: DiskVerdict): { subject: string; state: string; message: string; cleared: string } {
  const where =
    verdict.paths
      .filter((p) => p.level === 'block')
      .map((p) => p.path)
      .join(', ') || verdict.flaggedPaths.join(', ');
  return {
    subject: POOL_HOLD_SUBJECT,
    state: 'held',
    message: `disk pressure: ${where} reached the block threshold ${verdict.blockAt}%; GC sweeps now, and pool refills stay blocked until every path is under ${verdict.warnAt}%`,
    // Worded when the hold is set, and logged when it clears: the warning threshold may have changed by then.
    cleared: 'disk pressure over: every path is under the warning threshold again; pool refills create again',
  };
}
