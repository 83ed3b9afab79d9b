/**
 * An upgrade with work in flight, as docs/upgrade.md describes it for one host: the previous release's worker
 * runs with its schedules and a circuit open on its timer; it is stopped (SIGTERM) while the timer is pending,
 * and the current build's worker starts on the same task queue. The timer fires under the new build, which
 * replays the old build's history, and the circuit recovers exactly once; the schedules run on.
 *
 * The previous release is built from its commit (previous-release.ts) in a git worktree of this checkout, with
 * this checkout's node_modules when that holds every package its lockfile pins, at the same path, version and
 * integrity (else an offline-first `npm ci`, which compiles better-sqlite3 again). Both workers are
 * the real `keeper worker` bins against the suite's dev server, on an engine of this file's own, running ah's
 * crash-looping test image (created by the old build's `keeper service create`).
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { lastLoopResults } from '../../src/db/loop-results';
import { openStateDb, type StateDb } from '../../src/db/open';
import { ids } from '../../src/ids';
import type { CircuitState } from '../../src/contracts/circuit';
import { circuitStateQuery } from '../../src/workflows/messages';
import { KEEPER_BIN, watchOutput } from '../helpers/cli';
import { extraEngine, stopEngine, type ExtraEngine } from '../helpers/engines';
import { CRASHLOOP_IMAGE, tempDir, uniqueId, waitFor } from '../helpers/fixtures';
import { deployments, nowSec, service } from '../reconcile/rows';
import { PREVIOUS_RELEASE } from './previous-release';

const run = promisify(execFile);
const CHECKOUT = path.join(__dirname, '..', '..');
const work = tempDir('keeper-upgrade-');
const oldTree = path.join(work, 'previous');
const workers: ReturnType<typeof watchOutput>[] = [];
let engine: ExtraEngine | undefined;
let connection: Connection | undefined;
let db: StateDb | undefined;

/**
 * Whether this checkout's lockfile pins every package of `oldLock` at the same path, version and integrity: its
 * node_modules then holds exactly what the old build resolves (newer packages beside them are never imported).
 */
function holdsEveryPackageOf(oldLock: string, lock: string): boolean {
  type Pins = Record<string, { version?: string; integrity?: string }>;
  const [old, mine] = [oldLock, lock].map((l) => (JSON.parse(l) as { packages: Pins }).packages);
  return Object.entries(old).every(
    ([at, pin]) => at === '' || (mine[at]?.version === pin.version && mine[at]?.integrity === pin.integrity),
  );
}

/** Builds the previous release in a worktree; its bin, run with node. */
async function buildPreviousRelease(): Promise<string> {
  await run('git', ['-C', CHECKOUT, 'worktree', 'add', '--detach', oldTree, PREVIOUS_RELEASE.commit]);
  const oldLock = fs.readFileSync(path.join(oldTree, 'package-lock.json'), 'utf8');
  if (holdsEveryPackageOf(oldLock, fs.readFileSync(path.join(CHECKOUT, 'package-lock.json'), 'utf8'))) {
    fs.symlinkSync(path.join(CHECKOUT, 'node_modules'), path.join(oldTree, 'node_modules'));
    await run('npm', ['run', 'build'], { cwd: oldTree, timeout: 300_000 });
  } else {
    // Its own dependencies, from npm's cache where it can; its prepare script builds it.
    await run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: oldTree, timeout: 900_000 });
  }
  return path.join(oldTree, 'bin', 'keeper.js');
}

let oldBin = '';
const host = uniqueId('upg-');
const dbFile = path.join(work, 'state.db');
/** The same settings for both builds, as an operator's env file would give them. */
const settingsEnv = () => ({
  ...process.env,
  DOCKER_HOST: engine!.dockerHost,
  TEMPORAL_ADDRESS: inject('devServerAddress'),
  KEEPER_DB: dbFile,
  KEEPER_HOST_ID: host,
  KEEPER_TENANT_RUNTIME: 'runc',
  KEEPER_METRICS_PORT: '0',
  KEEPER_LOG_FORMAT: 'json',
  KEEPER_CRASH_THRESHOLD: '2',
  KEEPER_CIRCUIT_BACKOFF: '30s',
  KEEPER_RECOVERY: 'stop',
  KEEPER_RECONCILE_INTERVAL: '2s',
  KEEPER_GC_INTERVAL: '1h',
  KEEPER_GC_FIRST_DELAY: '1h',
  KEEPER_POOL_INTERVAL: '1h',
  KEEPER_POOLED_TEMPLATES: '',
});

function startWorker(bin: string) {
  const worker = watchOutput(
    spawn(process.execPath, [bin, 'worker'], { cwd: work, env: settingsEnv(), stdio: ['ignore', 'pipe', 'pipe'] }),
  );
  workers.push(worker);
  return worker;
}

async function stopWorker(worker: ReturnType<typeof watchOutput>): Promise<number | null> {
  worker.child.kill('SIGTERM');
  return worker.exited;
}

beforeAll(async () => {
  oldBin = await buildPreviousRelease();
  engine = extraEngine('upgrade');
}, 1_200_000);

afterAll(async () => {
  for (const w of workers) {
    if (w.child.exitCode !== null || w.child.signalCode !== null) continue;
    w.child.kill('SIGKILL');
    await w.exited;
  }
  await connection?.close().catch(() => undefined);
  db?.close();
  if (engine) stopEngine(engine);
  await run('git', ['-C', CHECKOUT, 'worktree', 'remove', '--force', oldTree]).catch(() => undefined);
  await run('git', ['-C', CHECKOUT, 'worktree', 'prune']);
  fs.rmSync(work, { recursive: true, force: true });
});

describe(`upgrade from ${PREVIOUS_RELEASE.commit.slice(0, 7)} with a circuit open on its timer`, () => {
  it("the new build fires the old build's timer, the circuit recovers exactly once, and the schedules run on", async () => {
    const created = await run(
      process.execPath,
      [oldBin, 'service', 'create', '--tenant', 'tn-upgrade', '--name', 'crashloop', '--image', CRASHLOOP_IMAGE, '--json'],
      { cwd: work, env: settingsEnv() },
    );
    const sid = (JSON.parse(created.stdout) as { id: string }).id;
    db = openStateDb(dbFile);

    const old = startWorker(oldBin);
    await old.waitForOutput(/keeper is running/, 90_000);
    connection = await Connection.connect({ address: inject('devServerAddress') });
    const client = new Client({ connection });
    const circuit = client.workflow.getHandle(ids.circuit(host, sid));
    const opened = await waitFor(
      'the old build to open the circuit and hold it on its timer',
      async () => {
        const s = await circuit.query(circuitStateQuery).catch(() => undefined);
        return s?.phase === 'open' && s.retryAt > 0 ? s : undefined; // the old build's state: retryAt once held
      },
      90_000,
      250,
    );
    expect(await stopWorker(old)).toBe(0);
    const stoppedAt = nowSec();
    expect(opened.retryAt, 'the timer is still pending when the old worker stops').toBeGreaterThan(stoppedAt);

    const upgraded = startWorker(KEEPER_BIN);
    await upgraded.waitForOutput(/keeper is running/, 90_000);
    const startedAt = nowSec();
    const closed = (await circuit.result()) as CircuitState;
    expect(closed).toMatchObject({ serviceId: sid, escalation: 1, phase: 'closed', closedBy: 'timer', status: 'stopped' });
    expect(nowSec()).toBeGreaterThanOrEqual(opened.retryAt);
    expect(service(db, sid)).toMatchObject({ circuit_open: 0, circuit_open_count: 1, crash_count: 0, status: 'stopped' });
    expect(deployments(db, sid).filter((d) => d.trigger === 'auto_recovery')).toHaveLength(1);
    const runs = await waitFor(
      'the circuit workflow listed once, completed',
      async () => {
        const listed = [];
        for await (const w of client.workflow.list({ query: `WorkflowId = "${ids.circuit(host, sid)}"` })) listed.push(w.status.name);
        return listed.length > 0 && listed.every((s) => s !== 'RUNNING') ? listed : undefined;
      },
      30_000,
      500,
    );
    expect(runs).toEqual(['COMPLETED']);

    // The old build's schedules start ticks that the new build runs.
    const tick = await waitFor(
      'a scheduled tick run by the new build',
      () => {
        const r = lastLoopResults(db!).find((x) => x.loop === 'reconcile');
        return r && r.finishedAt > startedAt ? r : undefined;
      },
      30_000,
      250,
    );
    expect(tick.workflowId.startsWith(`keeper-${host}-reconcile`)).toBe(true);
    expect(await stopWorker(upgraded)).toBe(0);
    console.log(
      `upgrade: old worker stopped ${opened.retryAt - stoppedAt} s before the timer; new worker up after ${startedAt - stoppedAt} s`,
    );
  }, 300_000);
});
