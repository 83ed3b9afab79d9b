/** The soak's report in Markdown, to paste into docs/benchmarks.md: the ledger, the checks, the faults, the worker's usage. */
import os from 'node:os';
import ms from 'ms';
import { quantile } from '../host';
import type { FaultLog } from './faults';
import { balances, isBalanced, type Balance, type DeathClass, type Ledger } from './ledger';
import { replayCommand, type SoakOptions } from './options';
import { rssDrift, type RssDrift, type UsageSample } from './usage';

export interface RunFacts {
  startedAtMs: number;
  faultsEndedAtMs: number;
  settledAtMs: number;
  /** What was still unsettled when the bound ran out; empty when keeper settled. */
  unsettled: string[];
  loadAverages: number[];
}

const mark = (ok: boolean) => (ok ? '✓' : '**✗**');

const CLASS_ROWS: { cls: DeathClass; name: string; rule: string }[] = [
  {
    cls: 'shutdown-self',
    name: "died by itself during dockerd's shutdown",
    rule: 'counted only if keeper looked before the engine restarted (0 or 1)',
  },
  {
    cls: 'before-shutdown',
    name: "died before dockerd's shutdown with under 12 s of keeper's sight between (LOOK_CHANCE_MS: blinding host faults take their part)",
    rule: 'counted only if keeper looked before the engine restarted (0 or 1)',
  },
  {
    cls: 'circuit-open',
    name: 'after the look that opened its circuit, before keeper stopped it',
    rule: 'not counted (the circuit is open)',
  },
  { cls: 'keeper-stop', name: "keeper's stops of open circuits' containers", rule: 'not a crash' },
  { cls: 'keeper-restart', name: "keeper's restarts of unhealthy containers", rule: 'not a crash' },
  { cls: 'engine-stop', name: "stopped by dockerd's shutdown (its kill before the die)", rule: 'not a crash' },
  {
    cls: 'engine-stop-kept',
    name: "stopped by dockerd's shutdown, and still down --engine-stop-grace (2m) after",
    rule: 'counted once after the grace, if keeper looked while it was down (0 or 1)',
  },
];

const BALANCE_ROWS: { what: Balance['what']; rule: string }[] = [
  { what: 'crashes', rule: 'counted once each: one crash record (expected = 0)' },
  { what: 'expected exits', rule: 'exit 3 under keeper.expected-exit-codes=3: recorded (expected = 1), never counted' },
  { what: 'health failures', rule: 'an unhealthy episode keeper restarted: one crash (seen by health-check)' },
];

function ledgerTable(l: Ledger): string[] {
  const all = l.containers.flatMap(balances);
  const rows = BALANCE_ROWS.map(({ what, rule }) => {
    const bs = all.filter((b) => b.what === what);
    const sum = (f: (b: Balance) => number) => bs.reduce((n, b) => n + f(b), 0);
    const off = bs.filter((b) => !isBalanced(b)).length;
    const may = sum((b) => b.may);
    return `| ${what} | ${rule} | ${sum((b) => b.must)}${may ? ` (+${may} that may be)` : ''} | ${sum((b) => b.keeper)} | ${off === 0 ? '✓' : `**✗ ${off} containers**`} |`;
  });
  const deaths = l.containers.flatMap((c) => c.deaths);
  const unseen = deaths.filter((d) => d.death.kind === 'unseen' && d.cls === 'crash').length;
  const classRows = CLASS_ROWS.map(({ cls, name, rule }) => `| ${name} | ${rule} | ${deaths.filter((d) => d.cls === cls).length} | | |`);
  return [
    "| what Docker recorded | keeper's rule | Docker | keeper's records | balance |",
    '|---|---|---:|---:|---|',
    ...rows,
    `| of the crashes: unseen by the soak's event stream, found by RestartCount | counted | ${unseen} | | |`,
    ...classRows,
  ];
}

function checksTable(l: Ledger): string[] {
  const timersOff = l.timers.filter((t) => t.problem);
  const rows = [
    `| each circuit opening alerted, under a key of its own | ${l.alerts.openings} openings, ${l.alerts.alerted} alerted, ${l.alerts.distinctKeys} distinct keys | ${mark(l.alerts.problems.length === 0)} |`,
    `| each open circuit has a live timer (a running circuitBreaker at its opening, found by KeeperHost and ServiceId; its hold) | ${l.timers.length} open, ${l.timers.length - timersOff.length} with both | ${mark(timersOff.length === 0)} |`,
    `| the same, every 20 s during the run (circuits open 15 s or more, no host fault in the last 15 s) | ${l.audits.audits} audits (${l.audits.skipped} skipped: server restarting), ${l.audits.checked} circuits checked | ${mark(l.audits.problems.length === 0)} |`,
    `| keeper stopped a container only while its circuit was open | ${l.keeperStopsOutsideCircuits.length} outside | ${mark(l.keeperStopsOutsideCircuits.length === 0)} |`,
    ...l.consistency.checks.map(
      (c) => `| no row half-written: ${c.name} | ${c.checked} checked, ${c.problems.length} off | ${mark(c.problems.length === 0)} |`,
    ),
    `| the soak's own truth against the engine's RestartCount | ${l.containers.length} containers, ${l.truthProblems.length} disagree | ${mark(l.truthProblems.length === 0)} |`,
  ];
  return ['| check | result | |', '|---|---|---|', ...rows];
}

function faultsTable(f: FaultLog): string[] {
  const hostDetail = (kind: string) =>
    f.hostFaults
      .filter((h) => h.kind === kind)
      .map((h) => h.detail)
      .slice(0, 4)
      .join('; ');
  const rows = [...f.counts].sort((a, b) => b[1] - a[1]).map(([kind, n]) => `| ${kind} | ${n} | ${hostDetail(kind)} |`);
  const skipped = [...f.skipped].map(([why, n]) => `${why}: ${n}`).join(', ');
  return [
    '| fault | injected | e.g. |',
    '|---|---:|---|',
    ...rows,
    ...(skipped ? ['', `Draws skipped: ${skipped}.`] : []),
    ...(f.errors.length ? ['', `Faults that failed to inject (${f.errors.length}): ${f.errors.slice(0, 5).join('; ')}`] : []),
  ];
}

/** Time into the run as h:mm:ss. */
function clock(msValue: number): string {
  const sec = Math.max(0, Math.round(msValue / 1000));
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${Math.floor(sec / 3600)}:${pad(Math.floor(sec / 60) % 60)}:${pad(sec % 60)}`;
}

const fixed = (n: number | undefined, digits = 0) => (n === undefined ? '' : n.toFixed(digits));

function usageTable(samples: UsageSample[], startedAtMs: number): string[] {
  const rows = samples.map((s, i) => {
    const restarted = i > 0 && s.pid !== samples[i - 1].pid;
    return `| ${clock(s.atMs - startedAtMs)} | ${fixed(s.rssMb)} | ${fixed(s.cpuPercent, 1)} | ${s.pid === undefined ? 'worker down' : restarted ? 'worker restarted' : ''} |`;
  });
  const stat = (xs: number[], digits: number) => {
    const sorted = [...xs].sort((a, b) => a - b);
    return `${fixed(sorted[0], digits)} / ${fixed(quantile(sorted, 0.5), digits)} / ${fixed(sorted[sorted.length - 1], digits)}`;
  };
  const rss = samples.flatMap((s) => (s.rssMb === undefined ? [] : [s.rssMb]));
  const cpu = samples.flatMap((s) => (s.cpuPercent === undefined ? [] : [s.cpuPercent]));
  return [
    '| time into the run | RSS MB | CPU % of one core (since the row before) | |',
    '|---:|---:|---:|---|',
    ...rows,
    `| **min / median / max** | **${stat(rss, 0)}** | **${stat(cpu, 1)}** | |`,
    ...driftLines(rssDrift(samples, startedAtMs)),
  ];
}

/** RSS at the end against minute 10: of the run, and of the last worker's own life (no restart between). */
function driftLines(d: ReturnType<typeof rssDrift>): string[] {
  const words = (x: RssDrift) =>
    `${fixed(x.fromMb)} → ${fixed(x.toMb)} MB (${x.changePercent >= 0 ? '+' : ''}${x.changePercent.toFixed(0)} %)${x.restartsBetween ? `, ${x.restartsBetween} worker restarts between` : ''}`;
  return [
    '',
    `RSS at the end against minute 10 of the run: ${d.run ? words(d.run) : 'the run was shorter'}; against minute 10 of the last worker's life: ${d.lastWorker ? words(d.lastWorker) : 'it ran less than 10 min'}.`,
  ];
}

function problemLines(l: Ledger): string[] {
  const lines: string[] = [];
  for (const i of l.imbalances) {
    lines.push(
      `- ${i.serviceId} (container ${i.containerId}): ${i.balance.what}: Docker ${i.balance.must}${i.balance.may ? ` (+${i.balance.may} that may be)` : ''}, keeper ${i.balance.keeper}`,
    );
    lines.push(...i.lines.map((line) => `  - ${line}`));
  }
  const others = [
    ...l.alerts.problems,
    ...l.timers.filter((t) => t.problem).map((t) => `${t.serviceId}: open circuit (opening ${t.opening}): ${t.problem}`),
    ...l.audits.problems,
    ...l.keeperStopsOutsideCircuits,
    ...l.consistency.checks.flatMap((c) => c.problems),
    ...l.truthProblems.map((p) => `the soak's truth: ${p}`),
  ];
  return [...lines, ...others.map((p) => `- ${p}`)];
}

const pace = (o: SoakOptions) =>
  o.schedule === 'scripted'
    ? ''
    : `A service fault every ${ms(o.serviceFaultEveryMs)} and a host fault every ${ms(o.hostFaultEveryMs)} on average.`;

/** What faults the run had: the random schedule's length and seed, or the script. */
export const faultWords = (o: SoakOptions) =>
  o.schedule === 'scripted' ? 'each fault kind once (the scripted schedule)' : `${ms(o.durationMs)} of faults, seed ${o.seed}`;

export function renderReport(o: SoakOptions, l: Ledger, faults: FaultLog, usage: UsageSample[], run: RunFacts): string {
  const k = o.keeper;
  const settled =
    run.unsettled.length === 0
      ? `keeper settled ${ms(run.settledAtMs - run.faultsEndedAtMs)} after the faults stopped`
      : `keeper had not settled ${ms(run.settledAtMs - run.faultsEndedAtMs)} after the faults stopped (${run.unsettled.join('; ')}): the ledger is of that moment`;
  const load = run.loadAverages.length ? `load average (1 min) min/median/max ${stat3(run.loadAverages)} on ${os.cpus().length} cores` : '';
  const problems = problemLines(l);
  return [
    `### Soak: ${o.services} services, ${faultWords(o)}: ${l.balanced ? 'the ledger balances' : '**the ledger does not balance**'}`,
    '',
    `\`${replayCommand(o)}\``,
    '',
    `Started ${new Date(run.startedAtMs).toISOString()}; ${settled}. ${pace(o)} keeper: \`--crash-window ${k.crashWindow} --crash-threshold ${k.crashThreshold} --circuit-backoff ${k.circuitBackoff} --escalation-decay ${k.escalationDecay} --reconcile-interval ${k.reconcileInterval} --crash-record-max-per-service 0\`, the other settings at their defaults. ${load}`,
    '',
    ...ledgerTable(l),
    '',
    ...checksTable(l),
    '',
    ...faultsTable(faults),
    '',
    `The worker's resident memory and CPU, read from /proc every ${ms(o.sampleEveryMs)}:`,
    '',
    ...usageTable(usage, run.startedAtMs),
    ...(problems.length ? ['', `What does not balance (${problems.length} lines):`, '', ...problems] : []),
  ].join('\n');
}

function stat3(xs: number[]): string {
  const sorted = [...xs].sort((a, b) => a - b);
  return `${sorted[0].toFixed(1)}/${quantile(sorted, 0.5).toFixed(1)}/${sorted[sorted.length - 1].toFixed(1)}`;
}
