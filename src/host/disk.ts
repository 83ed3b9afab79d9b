/**
 * The disk guard: statfs of the DB's directory, Docker's root dir (from `docker info`) and every
 * --disk-paths entry, judged by src/policy/disk.ts. A path that cannot be measured is reported, never
 * skipped (W-D1). `keeper status` and the refill call `readDiskGuard`; deploys call `assertDiskAllows`. The pool
 * also obeys the hold that disk pressure sets (`poolDiskVerdict`), kept in the state DB so that the worker's disk
 * watcher and any refill, in whatever process, see the same one.
 */
import fs from 'node:fs';
import path from 'node:path';
import { reportedConditions } from '../db/conditions';
import type { Engine } from '../docker/engine';
import { DockerError } from '../docker/errors';
import { judgeDisk, nextPoolHold, POOL_HOLD_SUBJECT, poolHoldCondition, withPoolHold, type DiskUsage } from '../policy/disk';
import type { DiskVerdict } from '../contracts/disk';
import type { Settings } from '../settings';
import { reportConditions } from './conditions';
import type { HostDeps } from './deps';

/** What the guard needs: the engine (for its root dir) and the settings that name paths and thresholds. */
export interface GuardDeps {
  docker: Pick<Engine, 'info' | 'remoteAddress'>;
  settings: Pick<Settings, 'db' | 'diskPaths' | 'diskWarnPercent' | 'diskBlockPercent'>;
}

export interface GuardedPath {
  path: string;
  role: string;
  /** Set when the path itself is not known (e.g. the engine did not answer `docker info`). */
  error?: string;
}

/** Measures each path with statfs; a failure becomes an `error` on that path. */
export function readDiskUsage(paths: GuardedPath[]): DiskUsage[] {
  return paths.map((p) => {
    if (p.error !== undefined) return { path: p.path, role: p.role, error: p.error };
    try {
      const s = fs.statfsSync(p.path);
      return { path: p.path, role: p.role, totalBytes: s.blocks * s.bsize, freeBytes: s.bavail * s.bsize };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why =
        code === 'ENOENT'
          ? 'does not exist on this machine'
          : code === 'EACCES'
            ? 'not readable by this process'
            : String((err as Error).message);
      return { path: p.path, role: p.role, error: why };
    }
  });
}

/**
 * The paths to guard: the DB's directory, Docker's root dir, then --disk-paths. Docker's root dir is only
 * measurable when the engine's filesystem is this machine's: an engine reached over TCP (`remoteEngine`, its
 * address) is reported as not visible instead of measuring an unrelated local directory of the same name.
 */
export function guardedPaths(
  settings: Pick<Settings, 'db' | 'diskPaths'>,
  dockerRoot: { dir: string } | { error: string },
  remoteEngine?: string,
): GuardedPath[] {
  const out: GuardedPath[] = [{ path: path.dirname(path.resolve(settings.db)), role: 'state DB directory' }];
  if ('error' in dockerRoot) {
    out.push({ path: '(docker root dir)', role: 'docker root dir', error: dockerRoot.error });
  } else if (remoteEngine) {
    out.push({
      path: dockerRoot.dir,
      role: 'docker root dir',
      error: `engine at ${remoteEngine} is remote; its disk is not visible from this process`,
    });
  } else {
    out.push({ path: dockerRoot.dir, role: 'docker root dir' });
  }
  for (const p of settings.diskPaths) out.push({ path: path.resolve(p), role: 'configured path' });
  return out;
}

export async function dockerRootDir(docker: Pick<Engine, 'info'>): Promise<{ dir: string } | { error: string }> {
  try {
    return { dir: (await docker.info()).dockerRootDir };
  } catch (err) {
    if (err instanceof DockerError) return { error: `docker info failed, root dir unknown: ${err.message}` };
    throw err;
  }
}

/** The whole guard: paths, usage, verdict. */
export async function readDiskGuard(deps: GuardDeps): Promise<DiskVerdict> {
  const paths = guardedPaths(deps.settings, await dockerRootDir(deps.docker), deps.docker.remoteAddress);
  return judgeDisk(readDiskUsage(paths), deps.settings.diskWarnPercent, deps.settings.diskBlockPercent);
}

export class DiskBlockedError extends Error {
  override name = 'DiskBlockedError';
  constructor(
    readonly verdict: DiskVerdict,
    what: string,
  ) {
    super(`${what} blocked by the disk guard: ${verdict.message}`);
  }
}

/** For deploys and other writers: throws DiskBlockedError, naming path and usage, when any path is at block. */
export async function assertDiskAllows(deps: GuardDeps, what = 'operation'): Promise<DiskVerdict> {
  const verdict = await readDiskGuard(deps);
  if (verdict.level === 'block') throw new DiskBlockedError(verdict, what);
  return verdict;
}

/** The condition loop the pool hold is kept under (keeper_reported_conditions). */
const DISK_LOOP = 'disk';

type HoldDeps = Pick<HostDeps, 'db' | 'log' | 'settings' | 'clock'>;

export function isPoolHeld({ db, settings }: Pick<HostDeps, 'db' | 'settings'>): boolean {
  return reportedConditions(db, settings.hostId, DISK_LOOP).some((c) => c.subject === POOL_HOLD_SUBJECT);
}

/** Sets or clears the pool hold from a fresh verdict (written, and logged, only when it changes); returns it. */
export function updatePoolHold(deps: HoldDeps, verdict: DiskVerdict): boolean {
  const held = isPoolHeld(deps);
  const next = nextPoolHold(held, verdict);
  if (next !== held) reportConditions(deps, DISK_LOOP, next ? [poolHoldCondition(verdict)] : []);
  return next;
}

/** The verdict the pool refill obeys: the guard's, with the hold of disk pressure applied. */
export async function poolDiskVerdict(deps: GuardDeps & HoldDeps): Promise<DiskVerdict> {
  const verdict = await readDiskGuard(deps);
  return withPoolHold(verdict, updatePoolHold(deps, verdict));
}
