/** bench:fleet's output: a header that says what ran, and one markdown row per fleet size. */
import os from 'node:os';
import { LOOP_NAMES as LOOPS, type LoopName } from '../src/loops/registry';
import type { Rates } from './fleet-measure';
import { quantile } from './host';

/** The fleet bench's options (bench/fleet.ts parses them). */
export interface Options {
  sizes: number[];
  windowMs: number;
  baselineMs: number;
  hostsPerProcess: number;
  everyMs: Record<LoopName, number>;
  speedup: number;
  lagBoundMs: number;
  /** --workflows-in-main-thread: each process runs its hosts' workflows in its main thread (see fleet-worker.ts). */
  workflowsInMainThread: boolean;
}

/** How late the fleet's runs came (bench/fleet.ts measures them). */
export interface Lags {
  expected: number;
  found: number;
  late: number;
  startLagMs: number[];
  finishLagMs: number[];
}

export interface Row {
  n: number;
  processes: number;
  lags: Lags;
  /** Per host per day at the real intervals. */
  perDay: Rates;
  /** Per second during the window, all hosts. */
  window: Rates;
  load1: number;
}

const human = (ms: number) => (ms % 3_600_000 === 0 ? `${ms / 3_600_000}h` : ms % 60_000 === 0 ? `${ms / 60_000}m` : `${ms / 1000}s`);
const secs = (ms: number) => (Number.isFinite(ms) ? (ms / 1000).toFixed(1) : '∞');
const int = (x: number) => Math.round(x).toLocaleString('en-US');

export function header(o: Options): string {
  const intervals = LOOPS.map((l) => `${l} ${human(o.everyMs[l])}`).join(', ');
  return [
    `bench:fleet on ${os.cpus().length} cores (load average at start ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')})`,
    'cluster: temporal-server 1.29.1, PostgreSQL 15, SQL visibility, mTLS frontend; a fresh one per N',
    'hosts: keeper workers built by src/app/keeper-host.ts (own task queue, SQLite state DB, schedules, event watcher),',
    `  ${o.hostsPerProcess} per Node process; engine: one real Docker engine shared by all, no services, pool size 0 (idle hosts)`,
    o.workflowsInMainThread
      ? "  workflows in each process's main thread (the SDK's debugMode), not a worker thread per host"
      : '  workflows in a worker thread per host (the SDK default)',
    `intervals: ${intervals}; run at ${o.speedup}× speed (per-day figures scaled back); window ${human(o.windowMs)} after a ${human(o.baselineMs)} baseline`,
    `on time: every schedule mark in the window has its run, finished within ${human(o.lagBoundMs)} of the mark`,
    '',
    '| hosts | procs | runs (expected) | late or missing | start lag p50 / p99 / max (s) | finish lag p50 / p99 / max (s) | server CPU s/host/day | PostgreSQL CPU s/host/day | PG growth MB/host/day | actions/host/day | CPU in window: server+PG / workers (cores) | load (1 min) | on time |',
    '|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---|---:|---|',
  ].join('\n');
}

/** Every mark in the window has its run (runs besides the marks, such as a worker's first refill, may add to them), none late. */
export function onTime(r: Row): boolean {
  return r.lags.found >= r.lags.expected && r.lags.late === 0;
}

export function formatRow(r: Row): string {
  const { lags: l, perDay: d, window: w } = r;
  const missing = l.expected - l.found;
  const bad = Math.max(0, missing) + l.late;
  const q = (xs: number[]) => `${secs(quantile(xs, 0.5))} / ${secs(quantile(xs, 0.99))} / ${secs(xs[xs.length - 1] ?? NaN)}`;
  return `| ${r.n} | ${r.processes} | ${l.found} (${l.expected}) | ${bad} | ${q(l.startLagMs)} | ${q(l.finishLagMs)} | ${d.serverCpuS.toFixed(1)} | ${d.postgresCpuS.toFixed(1)} | ${(d.dbBytes / 1e6).toFixed(2)} | ${int(d.actions)} | ${(w.serverCpuS + w.postgresCpuS).toFixed(2)} / ${w.workersCpuS.toFixed(2)} | ${r.load1.toFixed(1)} | ${onTime(r) ? 'yes' : 'no'} |`;
}
