/**
 * A newcomer's clean clone of this repository with `npm install` done: the first half of the front door
 * (test/e2e/front-door.test.ts walks the second, `npm start`). The install compiles better-sqlite3, over a minute of
 * one core, and needs nothing the serial group holds; `npm start` takes the embedded server's fixed ports, so it
 * must run alone. newcomer-install.test.ts therefore makes the clone in the parallel group, early, in a dir of this
 * run's own, and front-door.test.ts takes it from there (run on its own, it makes the clone itself). Global
 * teardown removes the dir either way. No vitest imports: global teardown loads this module.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RUN_TAG_VARIABLE } from '../helpers/host-state';

const REPO = path.join(__dirname, '..', '..');
const MINUTE_MS = 60_000;
/** Written beside the clone once its npm install has succeeded. */
const INSTALLED = 'installed';

/** This run's newcomer dir: the clone is `keeper` inside it. */
export function newcomerDir(tag = process.env[RUN_TAG_VARIABLE]): string {
  if (!tag) throw new Error(`${RUN_TAG_VARIABLE} is not set: the newcomer's clone belongs to a run of the suite`);
  return path.join(os.tmpdir(), `keeper-newcomer-${tag}`);
}

/** The environment of a newcomer's shell: this process's, without any keeper or Temporal setting. */
export function newcomerEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) if (/^(KEEPER_(?!TEST_RUN)|TEMPORAL_|DOCKER_HOST$)/.test(name)) delete env[name];
  return env;
}

/** Runs `command` in `cwd` as the newcomer, its output kept for the failure message; bounded by `timeoutMs`. */
function runAsNewcomer(cwd: string, command: string, args: string[], timeoutMs: number): string {
  return execFileSync(command, args, { cwd, env: newcomerEnv(), encoding: 'utf8', timeout: timeoutMs, stdio: 'pipe' });
}

/** Clones the repository into `dir`/keeper and runs `npm install` there; the clone's path. */
export function cloneAndInstall(dir: string): string {
  const clone = path.join(dir, 'keeper');
  fs.mkdirSync(dir, { recursive: true });
  execFileSync('git', ['clone', '--quiet', '--no-hardlinks', REPO, clone], { timeout: 5 * MINUTE_MS });
  runAsNewcomer(clone, 'npm', ['install', '--no-audit', '--no-fund'], 20 * MINUTE_MS);
  fs.writeFileSync(path.join(dir, INSTALLED), '');
  return clone;
}

/** The clone in `dir` whose npm install succeeded, if this run made one. */
export function installedClone(dir: string): string | undefined {
  return fs.existsSync(path.join(dir, INSTALLED)) ? path.join(dir, 'keeper') : undefined;
}
