/**
 * keeper as an operator installs it: `npm pack` of the project (its own prepack and prepare scripts: a clean
 * build), then `npm install -g --prefix` of that tarball, with no TypeScript or other dev tool on PATH. The
 * installed `keeper` runs from a directory outside the checkout: its help (and version), `keeper status` on a real state DB,
 * and a worker against the suite's dev server on an engine of this file's own, stopped by SIGTERM.
 *
 * The project is packed from a staged copy of its packable sources, so that the prepack's clean build never
 * removes the checkout's dist/ under the rest of the suite. The install uses npm's own cache and registry;
 * better-sqlite3 takes a prebuilt binary, as on an operator's machine that can fetch one: prebuild-install finds it
 * in a local dir (npm_config_better_sqlite3_local_prebuilds), made from the binary this checkout's npm install
 * compiled. Compiling it at install is the newcomer's npm install's part (test/e2e/newcomer-install.test.ts, the
 * same package); a second compile in the same run, over a minute of one core, would show nothing more.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { extraEngine, stopEngine, type ExtraEngine } from '../helpers/engines';
import { freshDb, tempDir, uniqueId } from '../helpers/fixtures';
import { watchOutput } from '../helpers/cli';

const run = promisify(execFile);
const CHECKOUT = path.join(__dirname, '..', '..');
const PACKABLE = ['package.json', 'package-lock.json', 'README.md', 'bin', 'deploy', 'docs', 'src', 'tsconfig.json', 'tsconfig.build.json'];
const version: string = JSON.parse(fs.readFileSync(path.join(CHECKOUT, 'package.json'), 'utf8')).version;

const work = tempDir('keeper-install-');
const prefix = path.join(work, 'prefix');
const outside = path.join(work, 'elsewhere');
let engine: ExtraEngine | undefined;
let tarball = '';

/** PATH without any node_modules/.bin (vitest's runner adds the checkout's): nothing of the dev install leaks in. */
const cleanPath = (process.env.PATH ?? '')
  .split(path.delimiter)
  .filter((d) => !d.includes('node_modules'))
  .join(path.delimiter);
/** The installed keeper's environment: found on PATH, no Temporal CLI, no checkout. */
const installedEnv = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
  HOME: process.env.HOME,
  PATH: `${path.join(prefix, 'bin')}${path.delimiter}${cleanPath}`,
  TEMPORAL_ADDRESS: '',
  ...extra,
});

async function keeperInstalled(args: string[], extra: NodeJS.ProcessEnv = {}) {
  return run('keeper', args, { cwd: outside, env: installedEnv(extra), timeout: 120_000 })
    .then(({ stdout, stderr }) => ({ code: 0, stdout, stderr }))
    .catch((err: { code?: number; stdout?: string; stderr?: string }) => ({
      code: err.code,
      stdout: err.stdout ?? '',
      stderr: err.stderr ?? '',
    }));
}

/**
 * A dir holding better-sqlite3's binary as a prebuilt one, named as prebuild-install looks for it (another version,
 * Node ABI, platform or libc finds none there, and compiles).
 */
function localPrebuilds(): string {
  const dir = path.join(work, 'prebuilds');
  const pkgDir = path.join(CHECKOUT, 'node_modules', 'better-sqlite3');
  const bsqVersion: string = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).version;
  const name = `better-sqlite3-v${bsqVersion}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  fs.mkdirSync(dir);
  execFileSync('tar', ['-czf', path.join(dir, name), '-C', pkgDir, 'build/Release/better_sqlite3.node']);
  return dir;
}

beforeAll(async () => {
  const stage = path.join(work, 'stage');
  fs.mkdirSync(stage);
  fs.mkdirSync(outside);
  for (const entry of PACKABLE) fs.cpSync(path.join(CHECKOUT, entry), path.join(stage, entry), { recursive: true });
  fs.symlinkSync(path.join(CHECKOUT, 'node_modules'), path.join(stage, 'node_modules'));
  const packed = await run('npm', ['pack', '--pack-destination', work], { cwd: stage, timeout: 300_000 });
  tarball = path.join(work, packed.stdout.trim().split('\n').pop()!);
  await run('npm', ['install', '-g', '--prefix', prefix, tarball, '--prefer-offline', '--no-audit', '--no-fund'], {
    cwd: outside,
    env: { ...process.env, PATH: cleanPath, npm_config_better_sqlite3_local_prebuilds: localPrebuilds() },
    timeout: 900_000,
  });
  engine = extraEngine('install');
}, 1_200_000);

afterAll(() => {
  if (engine) stopEngine(engine);
  fs.rmSync(work, { recursive: true, force: true });
});

describe('the packed and installed keeper', () => {
  it('holds the built CLI and workflow bundle, and no sources, tests or dev dependencies', async () => {
    const listing = (await run('tar', ['-tzf', tarball])).stdout.split('\n');
    expect(listing).toContain('package/dist/cli.js');
    expect(listing).toContain('package/dist/workflow-bundle.js');
    expect(listing).toContain('package/bin/keeper.js');
    expect(listing).toContain('package/deploy/systemd/keeper.service');
    expect(listing.filter((f) => /^package\/(src|test|scripts)\//.test(f) || f.endsWith('.map'))).toEqual([]);
    const installed = path.join(prefix, 'lib', 'node_modules', 'keeper', 'node_modules');
    for (const dev of ['typescript', 'vitest', 'tsx', '@temporalio/testing'])
      expect(fs.existsSync(path.join(installed, dev)), dev).toBe(false);
  });

  it('runs from any directory: its help, and keeper status on a state DB', async () => {
    const help = await keeperInstalled(['--help']);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^ {2}worker /m);
    const v = await keeperInstalled(['--version']);
    expect(v.code, v.stderr).toBe(0);
    expect(v.stdout.trim()).toBe(version);
    const { db, file } = freshDb(tempDir('keeper-install-db-'));
    db.close();
    const status = await keeperInstalled(['status', '--db', file, '--host-id', 'installed']);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^host installed$/m);
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  });

  it('without a Temporal address or CLI, the worker says in one line what to do', async () => {
    const db = path.join(work, 'no-cli', 'state.db');
    const r = await keeperInstalled(['worker', '--db', db, '--tenant-runtime', 'runc', '--metrics-port', '0'], {
      DOCKER_HOST: engine!.dockerHost,
    });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^keeper: no Temporal CLI for the embedded dev server: put `temporal` on PATH.*KEEPER_TEMPORAL_CLI.*TEMPORAL_ADDRESS/,
      ),
    ]);
  });

  it('runs a worker against a Temporal server until SIGTERM, then exits 0', async () => {
    const db = path.join(work, 'worker', 'state.db');
    fs.mkdirSync(path.dirname(db));
    const args = [
      'worker',
      '--db',
      db,
      '--host-id',
      uniqueId('inst-'),
      '--temporal-address',
      inject('devServerAddress'),
      '--tenant-runtime',
      'runc',
      '--metrics-port',
      '0',
      '--log-format',
      'json',
    ];
    const worker = watchOutput(
      spawn('keeper', args, { cwd: outside, env: installedEnv({ DOCKER_HOST: engine!.dockerHost }), stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    try {
      await worker.waitForOutput(/keeper is running[\s\S]*pool\s+next run/, 90_000);
    } finally {
      worker.child.kill('SIGTERM');
    }
    expect(await worker.exited).toBe(0);
    expect(worker.output).toMatch(/shutting down[\s\S]*"keeper worker stopped"/);
  });
});
