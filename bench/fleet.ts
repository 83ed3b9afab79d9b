/**
 * `npm run bench:fleet`: N idle keeper hosts on one real Temporal cluster, on this machine. Per N, a fresh
 * cluster (temporal-server 1.29.1 on PostgreSQL 15, mTLS frontend, SQL visibility: test/helpers/cluster, as
 * bench:cluster starts it, plus its Prometheus metrics) and N hosts in forked Node processes (bench/fleet-worker.ts,
 * --hosts-per-process each). Each host is what `keeper worker` builds (src/app/keeper-host.ts): own task queue,
 * SQLite state DB, worker, schedules and event watcher. The engine side is one real Docker engine shared by every
 * host (DOCKER_HOST), on which the hosts have no services and a pool of size 0: idle hosts.
 *
 * Per N: a baseline phase (workers polling, no schedules yet), then the schedules, then the measured window. It
 * reports per host per day: CPU seconds of temporal-server and of PostgreSQL, the growth of the server's databases,
 * and the server's `action` counter; and whether every loop ran on time: each run of a schedule mark in the window
 * must exist and finish within --lag-bound of its mark.
 *
 * The loop intervals are keeper's defaults (src/settings.ts) unless given. --speedup K divides them (and the
 * first-GC delay) so that hourly loops run within a short window; per-day figures are then scaled back: the
 * baseline's rate (idle polling) counts fully, the rest (the runs) divided by K. Running on time at K× the run
 * rate is a harder test than at the real intervals; the herd at each mark (every host's schedule fires at the
 * same epoch-aligned instant) is the same size.
 *
 *   usage: DOCKER_HOST=$(bash scripts/extra-dockerd.sh start fleet) npm run bench:fleet [-- --hosts 100,300,500
 *          --window 10m --baseline 1m --hosts-per-process 100 --reconcile-interval 10m --pool-interval 1h
 *          --gc-interval 1h --speedup 6 --lag-bound 60s --workflows-in-main-thread]
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { LOOP_NAMES as LOOPS } from '../src/loops/registry';
import { loadSettings, parseDuration } from '../src/settings';
import { connectClient, resolveTemporalTarget } from '../src/temporal/connection';
import { freePort } from '../src/temporal/dev-server';
import { schedulePhaseMs } from '../src/temporal/schedules';
import { startCluster, type TemporalCluster } from '../test/helpers/cluster';
import { temporalTlsEnv } from '../test/helpers/cluster/keeper';
import { onTeardown, teardown as undoSteps, undoDepth } from './cost-host';
import type { FleetWorkerConfig } from './fleet-worker';
import { listRuns, marksBetween, postgresOf, rates, serverPid, snapshot, type Probes, type Rates, type Run } from './fleet-measure';
import { formatRow, header, onTime, type Lags, type Options, type Row } from './fleet-table';
import { arg, bundleOutOfProcess, requireExplicitEngine } from './host';

requireExplicitEngine('DOCKER_HOST=$(bash scripts/extra-dockerd.sh start fleet) npm run bench:fleet');

function options(): Options {
  const defaults = loadSettings({ db: '/nonexistent/fleet.db', hostId: 'fleet' }, {});
  const dur = (name: string, fallbackMs: number) => parseDuration(arg(name, `${fallbackMs}ms`));
  const everyMs = {
    reconcile: dur('reconcile-interval', defaults.reconcileIntervalMs),
    pool: dur('pool-interval', defaults.poolIntervalMs),
    gc: dur('gc-interval', defaults.gcIntervalMs),
  };
  const windowMs = dur('window', 10 * 60_000);
  // By default, just fast enough that the slowest loop runs once in the window.
  const autoSpeedup = Math.max(1, Math.ceil(Math.max(...Object.values(everyMs)) / windowMs));
  const o: Options = {
    sizes: arg('hosts', '100,300,500').split(',').map(Number),
    windowMs,
    baselineMs: dur('baseline', 60_000),
    hostsPerProcess: Number(arg('hosts-per-process', '100')),
    everyMs,
    speedup: Number(arg('speedup', String(autoSpeedup))),
    lagBoundMs: dur('lag-bound', 60_000),
    workflowsInMainThread: process.argv.includes('--workflows-in-main-thread'),
  };
  const bad = o.sizes.some((n) => !Number.isInteger(n) || n < 1) || !(o.hostsPerProcess >= 1) || !(o.speedup >= 1);
  if (bad) {
    process.stderr.write(
      'bench:fleet: --hosts takes positive integers (e.g. 100,300,500), --hosts-per-process and --speedup numbers ≥ 1\n',
    );
    process.exit(2);
  }
  return o;
}

/**
 * One teardown at a time: a signal's teardown and the one a failing size runs (its workers exit on the same
 * signal) would otherwise split the steps between them, and the signal's process.exit would cut the other short.
 */
let undoing: Promise<void> = Promise.resolve();
const teardown = (mark?: number) => (undoing = undoing.then(() => undoSteps(mark)));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits for `key` from every child (bounded), failing as soon as one exits. */
function awaitAll(children: ChildProcess[], key: 'ready' | 'scheduled', timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let left = children.length;
    const timer = setTimeout(() => reject(new Error(`fleet workers not ${key} within ${timeoutMs} ms`)), timeoutMs);
    for (const c of children) {
      if (c.exitCode !== null || c.signalCode !== null) return reject(new Error(`a fleet worker exited before ${key}`));
      c.once('exit', (code) => (clearTimeout(timer), reject(new Error(`a fleet worker exited (${code}) before ${key}`))));
      const onMessage = (m: Record<string, unknown>) => {
        if (!(key in m)) return;
        c.off('message', onMessage);
        if (--left > 0) return;
        clearTimeout(timer);
        resolve();
      };
      c.on('message', onMessage);
    }
  });
}

async function stopChildren(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(async (c) => {
      if (c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGTERM');
      const timer = setTimeout(() => c.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    }),
  );
}

/** Forks the worker processes, N/hostsPerProcess hosts each, and waits until every host's worker runs. */
async function startFleet(
  n: number,
  o: Options,
  cluster: TemporalCluster,
  bundle: { codePath: string },
  dir: string,
): Promise<ChildProcess[]> {
  const raw = {
    reconcileInterval: `${Math.round(o.everyMs.reconcile / o.speedup)}ms`,
    poolInterval: `${Math.round(o.everyMs.pool / o.speedup)}ms`,
    gcInterval: `${Math.round(o.everyMs.gc / o.speedup)}ms`,
    // Fresh hosts with nothing to settle: GC's first sweep may come at its first mark.
    gcFirstDelay: '1s',
    poolSize: '0',
    tenantRuntime: 'runc',
  };
  const ids = hostIds(n);
  const children: ChildProcess[] = [];
  onTeardown('stop the fleet workers', () => stopChildren(children));
  for (let i = 0; i < n; i += o.hostsPerProcess) {
    const child = fork(path.join(__dirname, 'fleet-worker.ts'), [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    // A child gone (its own signal, a crash) is reported by awaitAll; a send to it must not throw out of the bench.
    child.on('error', () => undefined);
    children.push(child);
    const config: FleetWorkerConfig = {
      hostIds: ids.slice(i, i + o.hostsPerProcess),
      dir,
      raw,
      temporalEnv: temporalTlsEnv(cluster),
      workflowBundle: bundle,
      workflowsInMainThread: o.workflowsInMainThread,
    };
    child.send({ start: config });
  }
  const started = Date.now();
  await awaitAll(children, 'ready', 120_000 + n * 5_000);
  process.stderr.write(
    `bench:fleet: ${n} hosts' workers running after ${((Date.now() - started) / 1000).toFixed(0)} s (load average ${os.loadavg()[0].toFixed(1)})\n`,
  );
  return children;
}

async function operatorClient(cluster: TemporalCluster): Promise<Client> {
  const settings = loadSettings({ db: '/nonexistent/fleet.db', hostId: 'fleet' }, {});
  const target = resolveTemporalTarget(settings, temporalTlsEnv(cluster));
  const connection = await connectClient({ ...target, address: target.address! });
  onTeardown('close the operator client', () => connection.close());
  return new Client({ connection, namespace: target.namespace });
}

/** Waits (bounded) until every run marked before `untilMs` has closed, then lists the runs marked in the window. */
async function windowRuns(client: Client, fromMs: number, untilMs: number, boundMs: number): Promise<Run[]> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const runs = (await listRuns(client, fromMs - 60_000)).filter((r) => r.scheduledMs >= fromMs && r.scheduledMs < untilMs);
    if (runs.every((r) => r.closeMs !== undefined) || Date.now() > deadline) return runs;
    await sleep(5_000);
  }
}

/** The fleet's host ids, as startFleet names them. */
function hostIds(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `fleet-${String(i).padStart(4, '0')}`);
}

function lags(runs: Run[], n: number, o: Options, fromMs: number, untilMs: number): Lags {
  const expected = hostIds(n).reduce(
    (sum, host) =>
      sum +
      LOOPS.reduce((s, l) => {
        const every = Math.round(o.everyMs[l] / o.speedup);
        return s + marksBetween(every, fromMs, untilMs, schedulePhaseMs(host, l, every));
      }, 0),
    0,
  );
  const sorted = (xs: number[]) => xs.sort((a, b) => a - b);
  const finishLagMs = sorted(runs.map((r) => (r.closeMs ?? Infinity) - r.scheduledMs));
  return {
    expected,
    found: runs.length,
    late: finishLagMs.filter((x) => x > o.lagBoundMs).length,
    startLagMs: sorted(runs.map((r) => r.startMs - r.scheduledMs)),
    finishLagMs,
  };
}

/** Per host per day at the real intervals: the idle rate in full, the runs' share divided by the speedup. */
function perHostDay(idle: Rates, all: Rates, n: number, speedup: number): Rates {
  const scale = (k: keyof Rates) => ((idle[k] + (all[k] - idle[k]) / speedup) * 86_400) / n;
  return {
    serverCpuS: scale('serverCpuS'),
    postgresCpuS: scale('postgresCpuS'),
    workersCpuS: scale('workersCpuS'),
    dbBytes: scale('dbBytes'),
    actions: scale('actions'),
  };
}

async function measureFleet(n: number, o: Options, bundle: { codePath: string }): Promise<Row> {
  const mark = undoDepth();
  try {
    const metricsPort = await freePort();
    const cluster = await startCluster({ metricsPort });
    onTeardown('stop the cluster', () => cluster.stop());
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keeper-bench-fleet-'));
    onTeardown(`remove ${dir}`, () => fs.rmSync(dir, { recursive: true, force: true }));
    const children = await startFleet(n, o, cluster, bundle, dir);
    const probes: Probes = {
      serverPid: serverPid(cluster.dir),
      pg: postgresOf(cluster.dir),
      workerPids: () => children.map((c) => c.pid!),
      metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    };
    const s0 = await snapshot(probes);
    await sleep(o.baselineMs);
    const s1 = await snapshot(probes);
    for (const c of children) if (c.connected) c.send({ schedule: true });
    await awaitAll(children, 'scheduled', 120_000 + n * 5_000);
    const s2 = await snapshot(probes);
    await sleep(o.windowMs);
    const s3 = await snapshot(probes);
    const load1 = os.loadavg()[0];
    const runs = await windowRuns(await operatorClient(cluster), s2.atMs, s3.atMs, o.lagBoundMs + 60_000);
    const all = rates(s2, s3);
    return {
      n,
      processes: children.length,
      lags: lags(runs, n, o, s2.atMs, s3.atMs),
      perDay: perHostDay(rates(s0, s1), all, n, o.speedup),
      window: all,
      load1,
    };
  } finally {
    await teardown(mark);
  }
}

async function main(): Promise<void> {
  const o = options();
  const bundleDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keeper-bench-fleet-bundle-'));
  onTeardown(`remove ${bundleDir}`, () => fs.rmSync(bundleDir, { recursive: true, force: true }));
  const bundle = bundleOutOfProcess(bundleDir);
  process.stdout.write(header(o) + '\n');
  const rows: Row[] = [];
  for (const n of o.sizes) {
    const row = await measureFleet(n, o, bundle);
    rows.push(row);
    process.stdout.write(formatRow(row) + '\n');
  }
  const sizes = rows.filter(onTime).map((r) => r.n);
  process.stdout.write(`\nlargest N with every loop on time: ${sizes.length ? Math.max(...sizes) : 'none'} (of ${o.sizes.join(', ')})\n`);
}

// `on`, not `once`: tsx lets this process handle a signal itself only while it has a listener of its own, and
// Ctrl-C reaches the whole process group, so a second signal may follow the first during the teardown.
let stopping = false;
function stopEverything(why: string, code: number): void {
  if (stopping) return;
  stopping = true;
  process.stderr.write(`bench:fleet: ${why}, stopping what it started\n`);
  void teardown().finally(() => process.exit(code));
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => stopEverything(signal, 130));
process.on('uncaughtException', (err) => stopEverything(`uncaught ${err.message.split('\n')[0]}`, 1));

main()
  .catch((err) => {
    process.stderr.write(`bench:fleet failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => teardown());
