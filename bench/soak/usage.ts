/**
 * The worker's resident memory and CPU over the run, read from /proc every `everyMs`: VmRSS from
 * /proc/<pid>/status, and utime + stime from /proc/<pid>/stat (in clock ticks, 100 a second on Linux x86 and arm
 * builds), as a share of one core over the interval. A worker restarted within an interval (a fault) starts a new
 * count: that interval's CPU is left blank.
 */
import fs from 'node:fs';

const TICKS_PER_SECOND = 100;

export interface UsageSample {
  atMs: number;
  pid: number | undefined;
  rssMb: number | undefined;
  /** Percent of one core since the last sample, when the same process ran through it. */
  cpuPercent: number | undefined;
}

function readProc(pid: number): { rssMb: number; cpuTicks: number } | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cpuTicks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
    return { rssMb: rssKb / 1024, cpuTicks };
  } catch {
    return undefined; // the process is gone (killed by a fault)
  }
}

export class UsageSampler {
  readonly samples: UsageSample[] = [];
  private last: { pid: number; cpuTicks: number; atMs: number } | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly pidNow: () => number | undefined) {}

  start(everyMs: number): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  stop(): void {
    clearInterval(this.timer);
    this.sample();
  }

  private sample(): void {
    const atMs = Date.now();
    const pid = this.pidNow();
    const read = pid === undefined ? undefined : readProc(pid);
    let cpuPercent: number | undefined;
    const last = this.last;
    if (read && last && last.pid === pid && atMs > last.atMs) {
      cpuPercent = ((read.cpuTicks - last.cpuTicks) / TICKS_PER_SECOND / ((atMs - last.atMs) / 1000)) * 100;
    }
    this.last = read && pid !== undefined ? { pid, cpuTicks: read.cpuTicks, atMs } : undefined;
    this.samples.push({ atMs, pid, rssMb: read?.rssMb, cpuPercent });
  }
}

/** The worker's RSS at one moment against another, and how many times it was started afresh between them. */
export interface RssDrift {
  fromMb: number;
  toMb: number;
  changePercent: number;
  /** Worker restarts (faults) between the two samples: a restarted worker's memory starts afresh. */
  restartsBetween: number;
}

/** The first sample at or after `fromMs` and the last one, both of a running worker; undefined when there are none. */
function driftBetween(samples: UsageSample[], fromMs: number): RssDrift | undefined {
  const read = samples.filter((s) => s.rssMb !== undefined);
  const from = read.find((s) => s.atMs >= fromMs);
  const to = read[read.length - 1];
  if (!from || !to || to.atMs <= from.atMs) return undefined;
  const between = samples.filter((s) => s.atMs > from.atMs && s.atMs <= to.atMs);
  const restartsBetween = between.filter((s, i) => s.pid !== undefined && s.pid !== (i === 0 ? from.pid : between[i - 1].pid)).length;
  const changePercent = ((to.rssMb! - from.rssMb!) / from.rssMb!) * 100;
  return { fromMb: from.rssMb!, toMb: to.rssMb!, changePercent, restartsBetween };
}

/**
 * Whether the worker's memory grows over a run: its RSS at the end against minute `afterMin` of the run, and against
 * minute `afterMin` of the last worker's own life (its start after the last worker kill), which no restart resets.
 */
export function rssDrift(samples: UsageSample[], startedAtMs: number, afterMin = 10): { run?: RssDrift; lastWorker?: RssDrift } {
  const lastPid = [...samples].reverse().find((s) => s.pid !== undefined)?.pid;
  const lastStartMs = samples.find((s) => s.pid === lastPid)?.atMs ?? startedAtMs;
  return {
    run: driftBetween(samples, startedAtMs + afterMin * 60_000),
    lastWorker: driftBetween(samples, Math.max(startedAtMs, lastStartMs) + afterMin * 60_000),
  };
}
