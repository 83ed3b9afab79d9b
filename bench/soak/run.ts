/**
 * One soak run: the stack up (rig.ts), keeper's first look at every service, faults for the run's length
 * (faults.ts), then faults stop, every crash loop is told to end, the run waits (bounded) until keeper has settled,
 * and balances its ledger (ledger.ts) from what Docker did (truth.ts), keeper's state DB, the webhook receiver and
 * the `temporal` CLI. Everything it started is stopped at the end, also on failure or an interrupt.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkConsistency } from './consistency';
import { Cleanup } from './cleanup';
import type { EngineStarter } from './engine';
import { FaultSchedule, type FaultLog } from './faults';
import { alertLedger, containerLedger, imbalancesOf, keeperStopsOutsideCircuits, readRecords, type Ledger } from './ledger';
import { OpeningWatch } from './openings';
import type { SoakOptions } from './options';
import { faultWords, renderReport, type RunFacts } from './report';
import { startRig, type Rig } from './rig';
import { runScript } from './script';
import { summaryOf, type SoakSummary } from './summary';
import { isSick, readLoop, setLoop } from './services';
import { checkTimers, openCircuits } from './timers';
import { engineWindows, rebaselineFromEngine } from './truth';
import { TimerAudit } from './timer-audit';
import { UsageSampler } from './usage';

export interface SoakResult {
  balanced: boolean;
  markdown: string;
  /** The ledger as one object: what `--json` prints. */
  summary: SoakSummary;
  ledger: Ledger;
  faults: FaultLog;
  /** Kept when the ledger does not balance (or --keep): the state DB, Temporal's DB and the worker's log. */
  keptDir: string | undefined;
}

const sleep = (msValue: number) => new Promise((r) => setTimeout(r, msValue));

/** Waits (bounded) until keeper has looked at every service once: its baseline, before any fault. */
async function firstLooks(rig: Rig, boundMs: number, interrupted?: AbortSignal): Promise<void> {
  const deadline = Date.now() + boundMs;
  const looked = () => rig.db.prepare('SELECT COUNT(*) FROM keeper_container_snapshots').pluck().get() as number;
  while (looked() < rig.services.length) {
    if (interrupted?.aborted) throw new Error('interrupted');
    if (Date.now() > deadline) throw new Error(`keeper looked at ${looked()} of ${rig.services.length} services within ${boundMs} ms`);
    await sleep(500);
  }
}

/** What keeps keeper from being settled now; empty when it is. */
function unsettled(rig: Rig, openings: OpeningWatch, quietMs: number): string[] {
  const now = Date.now();
  const looks = new Map(
    (rig.db.prepare('SELECT service_id AS id, seen_at AS at FROM keeper_container_snapshots').all() as { id: string; at: number }[]).map(
      (r) => [r.id, r.at],
    ),
  );
  const loud = [...rig.witness.containers.values()].filter((t) => now - t.lastEventAtMs < quietMs).length;
  const unlooked = rig.services.filter((s) => {
    if (openings.isOpen(s.serviceId)) return false;
    const last = rig.witness.containers.get(s.containerId)?.lastEventAtMs ?? 0;
    return ((looks.get(s.serviceId) ?? 0) + 1) * 1000 <= last;
  }).length;
  const sick = rig.services.filter((s) => isSick(s) && !openings.isOpen(s.serviceId)).length;
  const alerted = new Set(rig.receiver.received.map((r) => (JSON.parse(r.body) as { key: string }).key)).size;
  const unheld = openCircuits(rig.db).filter((c) => c.heldOpening !== c.opening).length;
  return [
    loud && `${loud} containers had an event in the last ${quietMs / 1000} s`,
    unlooked && `${unlooked} services not looked at since their last event`,
    sick && `${sick} services still sick`,
    unheld && `${unheld} open circuits not held by a workflow`,
    alerted < openings.openings.length && `${openings.openings.length - alerted} openings not alerted yet`,
  ].filter((x): x is string => typeof x === 'string');
}

async function settle(rig: Rig, openings: OpeningWatch, boundMs: number, quietMs: number): Promise<string[]> {
  for (const s of rig.services) if (readLoop(s) > 0) setLoop(s, 0);
  const deadline = Date.now() + boundMs;
  let left = unsettled(rig, openings, quietMs);
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(Math.min(2000, quietMs));
    left = unsettled(rig, openings, quietMs);
  }
  return left;
}

async function balanceLedger(rig: Rig, openings: OpeningWatch, audit: TimerAudit, faults: FaultLog): Promise<Ledger> {
  const records = readRecords(rig.db);
  const engine = engineWindows(rig.witness.shutdowns, faults.blindWindows());
  const containers = rig.services.map((s) =>
    containerLedger(s, rig.witness.containers.get(s.containerId)!, openings.openings, records, engine),
  );
  const imbalances = containers.flatMap(imbalancesOf);
  const alerts = alertLedger(openings.openings, rig.receiver.received);
  const timers = await checkTimers(rig.temporal.address, rig.hostId, openCircuits(rig.db)).catch((err: Error) =>
    openCircuits(rig.db).map((c) => ({ ...c, problem: `the temporal CLI failed: ${err.message.split('\n')[0]}` })),
  );
  // A circuit that closed by its timer between the read and the check had its timer: not a problem.
  for (const t of timers) if (t.problem && !openCircuits(rig.db).some((c) => c.serviceId === t.serviceId)) t.problem = undefined;
  const consistency = checkConsistency(rig.db, openings.openings);
  const stops = keeperStopsOutsideCircuits(containers, rig.witness.containers, openings.openings, engine);
  const balanced =
    imbalances.length === 0 &&
    alerts.problems.length === 0 &&
    timers.every((t) => !t.problem) &&
    stops.length === 0 &&
    audit.problems.length === 0 &&
    consistency.checks.every((c) => c.problems.length === 0) &&
    rig.witness.problems.length === 0;
  const audits = { audits: audit.audits, checked: audit.checked, skipped: audit.skipped, problems: audit.problems };
  return {
    containers,
    imbalances,
    alerts,
    timers,
    audits,
    consistency,
    truthProblems: rig.witness.problems,
    keeperStopsOutsideCircuits: stops,
    balanced,
  };
}

/** Progress, once a minute, so a long run shows it is alive. */
function progress(rig: Rig, openings: OpeningWatch, faults: FaultSchedule, say: (line: string) => void, startedAtMs: number) {
  return setInterval(() => {
    rig.proxy.requests.length = 0; // the proxy records every request; an hour of them is of no use here
    const records = rig.db.prepare('SELECT COUNT(*) FROM keeper_crash_records').pluck().get() as number;
    const injected = [...faults.log.counts.values()].reduce((a, b) => a + b, 0);
    say(
      `${Math.round((Date.now() - startedAtMs) / 60_000)} min: ${injected} faults, ${openings.openings.length} openings (${openings.openNow} open), ${records} crash records, load ${os.loadavg()[0].toFixed(1)}`,
    );
  }, 60_000);
}

export async function runSoak(
  o: SoakOptions,
  starter: EngineStarter,
  say: (line: string) => void,
  interrupted?: AbortSignal,
): Promise<SoakResult> {
  const cleanup = new Cleanup();
  let rig: Rig | undefined;
  let balanced = false;
  try {
    say(`soak: ${o.services} services, ${faultWords(o)}`);
    rig = await startRig(o, starter, cleanup, say);
    await firstLooks(rig, 5 * 60_000, interrupted);
    const openings = new OpeningWatch(rig.db);
    openings.start(250);
    cleanup.add('opening watch', () => openings.stop());
    const usage = new UsageSampler(() => rig!.worker.pid);
    usage.start(o.sampleEveryMs);
    const faults = new FaultSchedule(rig, openings, o, say);
    interrupted?.addEventListener('abort', () => faults.stop());
    const audit = new TimerAudit(
      rig.db,
      () => rig!.temporal.address,
      rig.hostId,
      () => faults.quietSinceMs(),
    );
    audit.start();
    cleanup.add('timer audit', () => audit.stop());
    const loads: number[] = [];
    const startedAtMs = Date.now();
    const ticker = progress(rig, openings, faults, (line) => (loads.push(os.loadavg()[0]), say(line)), startedAtMs);
    cleanup.add('progress', () => clearInterval(ticker));
    if (o.schedule === 'scripted') await runScript(faults, rig, openings, o);
    else await faults.run(startedAtMs + o.durationMs);
    if (interrupted?.aborted) throw new Error('interrupted');
    const faultsEndedAtMs = Date.now();
    say('faults stopped: waiting for keeper to settle');
    const left = await settle(rig, openings, o.settleBoundMs, o.settleQuietMs);
    const settledAtMs = Date.now();
    await rebaselineFromEngine(rig.docker, rig.witness, 5000);
    openings.stop();
    usage.stop();
    audit.stop();
    const ledger = await balanceLedger(rig, openings, audit, faults.log);
    balanced = ledger.balanced;
    const facts: RunFacts = { startedAtMs, faultsEndedAtMs, settledAtMs, unsettled: left, loadAverages: loads };
    const markdown = renderReport(o, ledger, faults.log, usage.samples, facts);
    const summary = summaryOf(o, ledger, faults.log, usage.samples, startedAtMs);
    const keptDir = !balanced || o.keepDir ? rig.dir : undefined;
    // What the ledger was balanced from, beside the state DB and the engine's events (events.jsonl), to look into.
    fs.writeFileSync(path.join(rig.dir, 'openings.json'), JSON.stringify(openings.openings, null, 1));
    fs.writeFileSync(path.join(rig.dir, 'shutdowns.json'), JSON.stringify(rig.witness.shutdowns, null, 1));
    fs.writeFileSync(path.join(rig.dir, 'host-faults.json'), JSON.stringify(faults.log.hostFaults, null, 1));
    fs.writeFileSync(
      path.join(rig.dir, 'alerts.json'),
      JSON.stringify(
        rig.receiver.received.map((r) => JSON.parse(r.body)),
        null,
        1,
      ),
    );
    fs.writeFileSync(path.join(rig.dir, 'report.md'), markdown);
    fs.writeFileSync(path.join(rig.dir, 'summary.json'), JSON.stringify(summary, null, 1));
    return { balanced, markdown, summary, ledger, faults: faults.log, keptDir };
  } finally {
    const failures = await cleanup.run();
    for (const f of failures) say(`cleanup: ${f}`);
    if (rig && balanced && !o.keepDir) fs.rmSync(rig.dir, { recursive: true, force: true });
    else if (rig) say(`kept ${rig.dir} (state DB, Temporal DB, worker log)`);
  }
}
