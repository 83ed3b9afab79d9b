/** Build directories older than --build-dir-max-age, inside the resolved base; symlinks are never followed. */
import path from 'node:path';
import { planBuildDirs } from '../../../policy/gc';
import { observeBuildDirs, removeBuildDir } from '../build-dirs';
import { gcClass } from '../class';

export const buildDirs = gcClass({
  name: 'buildDirs',
  words: 'old build dirs',
  lookAsks: true,
  observe: ({ settings }) => observeBuildDirs(settings.buildDir),
  plan: (seen, { settings, clock }) =>
    planBuildDirs(seen.entries, { nowMs: clock.nowMs(), maxAgeMs: settings.buildDirMaxAgeMs, realBase: seen.realBase, sep: path.sep }),
  remove: (e, _deps, seen) => removeBuildDir(seen.realBase, e),
});
