/**
 * The soak's ledger as one JSON object (`npm run soak -- --json`): `balanced`, `seed`, the crashes Docker recorded
 * against keeper's records (`crashes: { docker, counted, missed, extra }`, each missed death and extra record listed
 * with its container, time and the fault active then), the deaths no look could have seen (`unobservable`, each with
 * the evidence that was gone), and one entry for each other line of the ledger.
 */
import type { FaultLog } from './faults';
import { balances, matchContainer, MAY_CLASSES, type ContainerLedger, type DeathClass, type KeeperRecord, type Ledger } from './ledger';
import { replayCommand, type SoakOptions } from './options';
import type { TrueDeath } from './truth';
import { rssDrift, type RssDrift, type UsageSample } from './usage';

/** A death or record the ledger lists, for a reader to find in the engine's events and keeper's DB. */
export interface ListedDeath {
  serviceId: string;
  containerId: string;
  at: string;
  exitCode: number | null;
  /** The service's last fault before it, and a host fault under way then (faults.ts activeAt). */
  activeFault: string;
}

export interface UnobservableDeath extends ListedDeath {
  class: DeathClass;
  /** What the engine no longer had when keeper could next look. */
  missingEvidence: string;
  /** keeper counted it all the same (it looked in time). */
  counted: boolean;
}

export interface LineBalance {
  docker: number;
  counted: number;
  missed: number;
  extra: number;
}

export interface SoakSummary {
  balanced: boolean;
  seed: number;
  services: number;
  minutes: number;
  replay: string;
  crashes: LineBalance & { missedDeaths: ListedDeath[]; extraRecords: (ListedDeath & { record: number; seenBy: string })[] };
  unobservable: UnobservableDeath[];
  expectedExits: LineBalance;
  healthFailures: LineBalance;
  alertKeys: { openings: number; alerted: number; distinctKeys: number; problems: string[] };
  liveTimers: { open: number; live: number; audits: number; problems: string[] };
  stopsOutsideCircuits: string[];
  halfWrittenRows: { check: string; checked: number; problems: string[] }[];
  truthProblems: string[];
  worker: {
    rssMb: (number | null)[];
    cpuPercent: (number | null)[];
    sampledEveryMs: number;
    /** RSS at the end against minute 10 of the run, and against minute 10 of the last worker's own life. */
    rssDrift: { run?: RssDrift; lastWorker?: RssDrift };
  };
  faults: Record<string, number>;
}

/** Why a death of each unobservable class left nothing a later look could read (ledger.ts says when each is one). */
const MISSING_EVIDENCE: Partial<Record<DeathClass, string>> = {
  'shutdown-self':
    "died while dockerd shut down: the engine's restart set RestartCount back to 0 and lost its events; only a look before the restart saw it",
  'before-shutdown':
    "died before dockerd's shutdown with under 12 s of keeper's sight between: the shutdown's stop overwrote its run's exit and times, the restart reset RestartCount and lost its events",
  'engine-stop-kept': "stopped by dockerd's shutdown and down past --engine-stop-grace: counted only by a look while it was still down",
};

const iso = (msValue: number) => new Date(msValue).toISOString();

function listed(c: ContainerLedger, d: TrueDeath, faults: FaultLog): ListedDeath {
  return {
    serviceId: c.service.serviceId,
    containerId: c.service.containerId.slice(0, 12),
    at: iso(d.atMs),
    exitCode: d.exitCode ?? null,
    activeFault: faults.activeAt(c.service.serviceId, d.atMs),
  };
}

function crashLines(l: Ledger, faults: FaultLog): Pick<SoakSummary, 'crashes' | 'unobservable'> {
  const missedDeaths: ListedDeath[] = [];
  const extraRecords: SoakSummary['crashes']['extraRecords'] = [];
  const unobservable: UnobservableDeath[] = [];
  for (const c of l.containers) {
    const { matched } = matchContainer(c).crashes;
    for (const slot of matched.missed) missedDeaths.push(listed(c, (slot.what as { death: TrueDeath }).death, faults));
    for (const r of matched.extra) extraRecords.push(extraOf(c, r.what, faults));
    const pairedDeaths = new Set(matched.pairs.map((p) => (p.slot.what as { death: TrueDeath }).death));
    for (const d of c.deaths.filter((x) => MAY_CLASSES.includes(x.cls))) {
      const missingEvidence = MISSING_EVIDENCE[d.cls] ?? d.cls;
      unobservable.push({ ...listed(c, d.death, faults), class: d.cls, missingEvidence, counted: pairedDeaths.has(d.death) });
    }
  }
  const total = lineOf(l, 'crashes');
  return { crashes: { ...total, missedDeaths, extraRecords }, unobservable };
}

function extraOf(c: ContainerLedger, r: KeeperRecord, faults: FaultLog): SoakSummary['crashes']['extraRecords'][number] {
  const atMs = r.diedAtMs ?? r.recordedAt * 1000;
  return {
    serviceId: c.service.serviceId,
    containerId: c.service.containerId.slice(0, 12),
    at: iso(atMs),
    exitCode: r.exitCode,
    activeFault: faults.activeAt(c.service.serviceId, atMs),
    record: r.id,
    seenBy: r.seenBy,
  };
}

/** One line's sums over the containers: deaths keeper had to record, its records, and the differences. */
function lineOf(l: Ledger, what: 'crashes' | 'expected exits' | 'health failures'): LineBalance {
  const bs = l.containers.flatMap(balances).filter((b) => b.what === what);
  const sum = (f: (b: (typeof bs)[number]) => number) => bs.reduce((n, b) => n + f(b), 0);
  return { docker: sum((b) => b.must), counted: sum((b) => b.keeper), missed: sum((b) => b.missed), extra: sum((b) => b.extra) };
}

export function summaryOf(o: SoakOptions, l: Ledger, faults: FaultLog, usage: UsageSample[], startedAtMs: number): SoakSummary {
  const timersOff = l.timers.filter((t) => t.problem);
  return {
    balanced: l.balanced,
    seed: o.seed,
    services: o.services,
    minutes: o.durationMs / 60_000,
    replay: replayCommand(o),
    ...crashLines(l, faults),
    expectedExits: lineOf(l, 'expected exits'),
    healthFailures: lineOf(l, 'health failures'),
    alertKeys: { ...l.alerts },
    liveTimers: {
      open: l.timers.length,
      live: l.timers.length - timersOff.length,
      audits: l.audits.audits,
      problems: [...timersOff.map((t) => `${t.serviceId}: ${t.problem}`), ...l.audits.problems],
    },
    stopsOutsideCircuits: l.keeperStopsOutsideCircuits,
    halfWrittenRows: l.consistency.checks.map((c) => ({ check: c.name, checked: c.checked, problems: c.problems })),
    truthProblems: l.truthProblems,
    worker: {
      rssMb: usage.map((s) => (s.rssMb === undefined ? null : Math.round(s.rssMb))),
      cpuPercent: usage.map((s) => (s.cpuPercent === undefined ? null : +s.cpuPercent.toFixed(1))),
      sampledEveryMs: o.sampleEveryMs,
      rssDrift: rssDrift(usage, startedAtMs),
    },
    faults: Object.fromEntries(faults.counts),
  };
}
