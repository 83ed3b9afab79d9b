/**
 * The front door's first half, walked as a newcomer walks it: a clean clone of this repository, with nothing of
 * this checkout's (no node_modules, no dist, no .tools) and no keeper variable set, then `npm install`, which must
 * build keeper. The clone is left in this run's newcomer dir for front-door.test.ts, which runs `npm start` in it
 * (see ./newcomer.ts for why the two halves are two files).
 *
 * A clone has only what is committed: run it on a clean tree (CI always does).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cloneAndInstall, newcomerDir } from './newcomer';

describe('the front door on a clean clone', () => {
  it('npm install builds keeper', { timeout: 45 * 60_000 }, () => {
    const clone = cloneAndInstall(newcomerDir());
    expect(fs.existsSync(path.join(clone, 'dist', 'cli.js')), 'npm install builds keeper').toBe(true);
    expect(fs.existsSync(path.join(clone, 'dist', 'workflow-bundle.js')), 'and bundles its workflows').toBe(true);
  });
});
