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
      path: u.path, role: u.role, level: 'unknown', usedPercent: null, totalBytes: null, freeBytes: null,
      message: `disk usage at ${u.path} (${u.role}) is unknown: ${u.error ?? 'not measured'}`,
    };
  }
  const used = usedPercent(u.totalBytes, u.freeBytes);
  const base = { path: u.path, role: u.role, usedPercent: Math.round(used * 10) / 10, totalBytes: u.totalBytes, freeBytes: u.freeBytes };
  if (used >= blockAt) {
    return { ...base, level: 'block', message: `insufficient disk space at ${u.path} (${u.role}): ${pct(used)} used, block threshold ${blockAt}%` };
  }
  if (used >= warnAt) {
    return { ...base, level: 'warn', message: `disk usage at ${u.path} (${u.role}): ${pct(used)} used, above warning threshold ${warnAt}%` };
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
