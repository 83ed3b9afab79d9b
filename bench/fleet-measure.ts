/**
 * What bench:fleet reads from the machine and the cluster: CPU seconds of temporal-server, of PostgreSQL (the
 * postmaster, its live backends, and the backends that have exited, which the kernel adds to the postmaster's
 * cutime/cstime) and of the fleet's worker processes, from /proc/<pid>/stat; the size of the server's two
 * databases (pg_database_size); the server's `action` counter; and each loop run's lag behind its schedule's mark.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { SCHEDULED_LOOPS, type LoopName } from '../src/loops/registry';
import { scrapeActions, total } from './cost-history';

const CLOCK_TICKS_PER_S = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

interface ProcStat {
  ppid: number;
  /** utime + stime, and cutime + cstime (children that exited and were waited for), in seconds. */
  ownS: number;
  childrenS: number;
}

function procStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // gone
  }
  // Fields after the command name (which may hold spaces), from field 3 (state) on.
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const tick = (i: number) => Number(f[i - 3]) / CLOCK_TICKS_PER_S;
  return { ppid: Number(f[1]), ownS: tick(14) + tick(15), childrenS: tick(16) + tick(17) };
}

const allPids = () =>
  fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number);

/** A process and all it has run: its own time, its exited children's, and its live children's. */
export function treeCpuSeconds(pid: number): number {
  const root = procStat(pid);
  if (!root) return 0;
  let s = root.ownS + root.childrenS;
  for (const p of allPids()) {
    const st = p === pid ? undefined : procStat(p);
    if (st?.ppid === pid) s += st.ownS;
  }
  return s;
}

/** temporal-server's pid: the process started with `--root <clusterDir>/server`. */
export function serverPid(clusterDir: string): number {
  const root = path.join(clusterDir, 'server');
  for (const p of allPids()) {
    const args = (() => {
      try {
        return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
      } catch {
        return [];
      }
    })();
    const i = args.indexOf('--root');
    if (i >= 0 && args[i + 1] === root) return p;
  }
  throw new Error(`no temporal-server process with --root ${root}`);
}

export interface PgEndpoint {
  pid: number;
  port: number;
}

/** The postmaster's pid and port, from its postmaster.pid (lines 1 and 4). */
export function postgresOf(clusterDir: string): PgEndpoint {
  const lines = fs.readFileSync(path.join(clusterDir, 'pg', 'data', 'postmaster.pid'), 'utf8').split('\n');
  return { pid: Number(lines[0]), port: Number(lines[3]) };
}

/** pg_database_size of the persistence and visibility databases together, in bytes. */
export function databaseBytes(pg: PgEndpoint): number {
  const sql = "select sum(pg_database_size(datname)) from pg_database where datname in ('temporal', 'temporal_visibility')";
  const out = execFileSync('psql', ['-h', '127.0.0.1', '-p', String(pg.port), '-U', 'temporal', '-d', 'temporal', '-Atc', sql], {
    encoding: 'utf8',
    env: { ...process.env, PGPASSWORD: 'temporal' },
  });
  return Number(out.trim());
}

export interface Snapshot {
  atMs: number;
  serverCpuS: number;
  postgresCpuS: number;
  workersCpuS: number;
  dbBytes: number;
  actions: number;
}

export interface Probes {
  serverPid: number;
  pg: PgEndpoint;
  workerPids: () => number[];
  metricsUrl: string;
}

export async function snapshot(p: Probes): Promise<Snapshot> {
  return {
    atMs: Date.now(),
    serverCpuS: treeCpuSeconds(p.serverPid),
    postgresCpuS: treeCpuSeconds(p.pg.pid),
    workersCpuS: p.workerPids().reduce((s, pid) => s + treeCpuSeconds(pid), 0),
    dbBytes: databaseBytes(p.pg),
    actions: total(await scrapeActions(p.metricsUrl)),
  };
}

export type Rates = Omit<Snapshot, 'atMs'>;

/** Per second, between two snapshots. */
export function rates(a: Snapshot, b: Snapshot): Rates {
  const s = (b.atMs - a.atMs) / 1000;
  return {
    serverCpuS: (b.serverCpuS - a.serverCpuS) / s,
    postgresCpuS: (b.postgresCpuS - a.postgresCpuS) / s,
    workersCpuS: (b.workersCpuS - a.workersCpuS) / s,
    dbBytes: (b.dbBytes - a.dbBytes) / s,
    actions: (b.actions - a.actions) / s,
  };
}

export interface Run {
  loop: LoopName;
  hostId: string;
  scheduledMs: number;
  startMs: number;
  closeMs: number | undefined;
}

const LOOP_OF_TYPE = new Map<string, LoopName>(SCHEDULED_LOOPS.map((l) => [l.schedule.workflowType, l.name]));
/** A schedule's run is `<workflowId>-<its mark, RFC 3339>`; keeper's workflow id is `keeper-<host>-<loop>`. */
const RUN_ID = new RegExp(`^keeper-(.+)-(${[...LOOP_OF_TYPE.values()].join('|')})-(\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ)$`);

/** Every loop run started since `sinceMs`, with its schedule's mark. */
export async function listRuns(client: Client, sinceMs: number): Promise<Run[]> {
  const runs: Run[] = [];
  const query = `StartTime >= "${new Date(sinceMs).toISOString()}"`;
  for await (const w of client.workflow.list({ query, pageSize: 1000 })) {
    const loop = LOOP_OF_TYPE.get(w.type);
    const m = RUN_ID.exec(w.workflowId);
    if (!loop || !m) continue;
    runs.push({ loop, hostId: m[1], scheduledMs: Date.parse(m[3]), startMs: w.startTime.getTime(), closeMs: w.closeTime?.getTime() });
  }
  return runs;
}

/** The marks of an interval schedule (aligned to the epoch, as Temporal aligns `every`) in [fromMs, toMs). */
/** Marks of an interval schedule (every everyMs, at phaseMs past each epoch-aligned multiple) in [fromMs, toMs). */
export function marksBetween(everyMs: number, fromMs: number, toMs: number, phaseMs = 0): number {
  return Math.max(0, Math.ceil((toMs - phaseMs) / everyMs) - Math.ceil((fromMs - phaseMs) / everyMs));
}
