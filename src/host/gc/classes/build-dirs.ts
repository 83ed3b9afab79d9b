/**
 * Build directories older than --build-dir-max-age, inside the resolved base: entries of the base, read with lstat,
 * never following a symlink. The base itself is resolved, so a base under a symlinked path still works (W-G10 in
 * docs/ah-differences.md); an entry is read again right before its removal.
 */
import fs from 'node:fs';
import path from 'node:path';
import { oneLine } from '../../../text';
import type { GcFailure } from '../../../contracts/gc';
import { planBuildDirs, type BuildDirObs } from '../../../policy/gc';
import { gcClass } from '../class';

export const buildDirs = gcClass({
  name: 'buildDirs',
  words: 'old build dirs',
  lookRequests: true,
  observe: ({ settings }) => observeBuildDirs(settings.buildDir),
  plan: (seen, { settings, clock }) =>
    planBuildDirs(seen.entries, { nowMs: clock.nowMs(), maxAgeMs: settings.buildDirMaxAgeMs, realBase: seen.realBase, sep: path.sep }),
  remove: (e, _deps, seen) => removeBuildDir(seen.realBase, e),
});

function observeBuildDirEntry(realBase: string, name: string): BuildDirObs | undefined {
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

function observeBuildDirs(base: string): { realBase: string; entries: BuildDirObs[]; skipped: GcFailure[] } {
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
function removeBuildDir(realBase: string, planned: BuildDirObs): void {
  const now = observeBuildDirEntry(realBase, planned.name);
  if (now === undefined) return; // already gone
  if (now.kind !== 'directory' || now.resolved !== planned.resolved) throw new Error('changed since it was planned; left alone');
  fs.rmSync(planned.path, { recursive: true, force: true });
}
