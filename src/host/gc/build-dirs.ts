/**
 * Build directories as GC sees them: entries of the base, read with lstat, never following a symlink. The base
 * itself is resolved, so a base under a symlinked path still works (W-G10 in docs/ah-differences.md).
 */
import fs from 'node:fs';
import path from 'node:path';
import { oneLine } from '../../db/open';
import type { BuildDirObs } from '../../policy/gc';
import type { GcFailure } from '../../contracts/gc';

export function observeBuildDirEntry(realBase: string, name: string): BuildDirObs | undefined {
  const full = path.join(realBase, name);
  let st: fs.Stats;
  try {
    st = fs.lstatSync(full);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const kind = st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'directory' : 'other';
  return { name, path: full, kind, mtimeMs: st.mtimeMs, resolved: kind === 'directory' ? realpathOrUndefined(full) : undefined };
}

function realpathOrUndefined(p: string): string | undefined {
  try {
    return fs.realpathSync(p);
  } catch {
    return undefined;
  }
}

export function observeBuildDirs(base: string): { realBase: string; entries: BuildDirObs[]; skipped: GcFailure[] } {
  if (!fs.existsSync(base)) return { realBase: path.resolve(base), entries: [], skipped: [] };
  const realBase = fs.realpathSync(base);
  const entries: BuildDirObs[] = [];
  const skipped: GcFailure[] = [];
  for (const name of fs.readdirSync(realBase)) {
    try {
      const e = observeBuildDirEntry(realBase, name);
      if (e) entries.push(e);
    } catch (err) {
      skipped.push({ name, error: oneLine(err) });
    }
  }
  return { realBase, entries, skipped };
}

/** Removes a planned entry, checked again first: one swapped for a symlink since the plan is left alone. */
export function removeBuildDir(realBase: string, planned: BuildDirObs): void {
  const now = observeBuildDirEntry(realBase, planned.name);
  if (now === undefined) return; // already gone
  if (now.kind !== 'directory' || now.resolved !== planned.resolved) throw new Error('changed since it was planned; left alone');
  fs.rmSync(planned.path, { recursive: true, force: true });
}
