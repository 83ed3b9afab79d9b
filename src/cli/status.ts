/**
 * `keeper status [--json]`: see src/host/status.ts for what it reads. The text is one function per section, in
 * SECTIONS' order: a new section is one more function there. `--json` prints the data as read, loop results raw.
 */
import type { Command } from 'commander';
import { readStatus, type HostStatus } from '../host/status';
import { configDifferences, workerConfigOf, workerPaceWords, type ConfigDifference } from '../host/worker-config';
import { otherWriterCondition } from '../policy/other-writer';
import { givenSettings, type Settings } from '../settings';
import { operatorTarget } from '../app/keeper';
import { describeTarget } from '../temporal/connection';
import { agoWords, isoSeconds } from '../time';
import { loopNamed } from '../loops/registry';
import { lastCrashWords, webhooksWords } from './words';
import { jsonOption, print, settingsFrom, table, withHost, withSettings } from './common';

type StatusView = Omit<HostStatus, 'worker'> & {
  /** The worker's record, and where this command's own flags differ from it. */
  worker: (NonNullable<HostStatus['worker']> & { differences: ConfigDifference[] }) | null;
  temporal: string;
};
type Section = (s: StatusView) => string[];

const indent = (text: string) => text.replace(/^/gm, '  ');

function when(unixSec: number | null, nowSec: number): string {
  return unixSec ? `${isoSeconds(unixSec)} (${agoWords(unixSec, nowSec)})` : '-';
}

/** Where this host's Temporal is (no connection is made): as the worker recorded it, else as configured here. */
function temporalSummary(settings: Settings, worker: HostStatus['worker']): string {
  if (worker) return `${worker.config.temporal}${worker.config.temporalEmbedded ? " (the worker's embedded server)" : ''}`;
  const target = operatorTarget(settings);
  return `${describeTarget(target)}${target.embedded ? " (npm start's embedded server)" : ''}`;
}

/** Where the flags and variables given to this command differ from what the worker recorded. */
function differencesFrom(cmd: Command, settings: Settings, worker: NonNullable<HostStatus['worker']>): ConfigDifference[] {
  const target = operatorTarget(settings);
  return configDifferences(worker.config, workerConfigOf(settings, describeTarget(target), target.embedded), givenSettings(cmd));
}

const header: Section = (s) => [`host ${s.host}`, `temporal ${s.temporal}`];

/** Which worker recorded its configuration, its pace, and where this command's flags differ from it. */
const worker: Section = ({ worker: w, now, host }) => {
  if (!w)
    return [
      `worker   no worker of host ${host} has recorded its configuration: tenant runtime and alerts below are this command's own settings`,
    ];
  return [
    `worker   keeper ${w.keeperVersion}, pid ${w.pid}, started ${when(w.startedAt, now)}`,
    `         ${workerPaceWords(w.config)}`,
    ...w.differences.map((d) => `differs  ${d.flag}: this command ${d.here}, the worker ${d.worker} (the worker's is shown)`),
  ];
};

const services: Section = (s) => {
  if (s.services.length === 0) return ['', 'services', '  none'];
  const rows = s.services.map((v) => [
    v.id,
    v.tenantId,
    v.name,
    v.status,
    v.crashesInWindow,
    v.circuitOpen ? `OPEN${v.circuitOpening === null ? '' : ` (opening ${v.circuitOpening})`}` : 'closed',
    v.circuitOpen ? when(v.circuitRetryAt, s.now) : '-',
    v.circuitOpenCount,
    v.lastCrash ? lastCrashWords(v.lastCrash, s.now) : '-',
  ]);
  return [
    '',
    'services',
    indent(table(['service', 'tenant', 'name', 'status', 'crashes', 'circuit', 'retry at', 'escalation', 'last crash'], rows)),
  ];
};

/** Crash policy labels that did not parse: the host's setting applies in their place. */
const labelProblems: Section = (s) =>
  s.crashPolicyLabels.length === 0 ? [] : ['', 'crash policy labels', ...s.crashPolicyLabels.map((l) => `  ${l}`)];

const hosted: Section = (s) => {
  const counts = (c: Record<string, number>) =>
    Object.entries(c)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ') || 'none';
  return ['', `databases      ${counts(s.databases)}`, `environments   ${counts(s.environments)}`];
};

/** Whether the engine answers: when it does not, the sections read from it (runtime, disk) say so too. */
const engine: Section = ({ engine: e }) => [
  e.reachable
    ? `engine         Docker ${e.serverVersion} (API ${e.apiVersion}), ${e.containersRunning} running`
    : `engine         NOT ANSWERING: ${e.error}`,
];

const tenantRuntime: Section = ({ tenantRuntime: r }) => {
  const registered = r.registered === null ? 'engine not answering' : r.registered ? 'registered' : 'NOT registered with this engine';
  return [`tenant runtime ${r.runtime} (${registered}): ${r.isolation}`];
};

const pool: Section = ({ pool: p }) => [
  `pool           ${p.templates.map((t) => `${t.name} ${t.ready}`).join(', ')} (total ${p.total}/${p.maxTotal})`,
];

const disk: Section = ({ disk: d }) => [
  '',
  `disk (${d.level}; warn ${d.warnAt}%, block ${d.blockAt}%)`,
  indent(
    table(
      ['path', 'role', 'used'],
      d.paths.map((p) => [p.path, p.role, p.usedPercent === null ? p.message : `${p.usedPercent.toFixed(1)}%`]),
    ),
  ),
];

const events: Section = (s) => ['', `events         ${s.events.state}: ${s.events.detail}`];

/** The worker's local looks: when each last looked and what it found, or since when it fails and why. */
const looks: Section = ({ looks: rows, now }) => {
  if (rows.length === 0) return ['looks          none recorded yet (a worker records each look)', ''];
  const found = (l: (typeof rows)[number]) => (l.lookedAt === null ? '-' : l.found === 0 ? 'nothing to do' : `${l.found} to do`);
  return [
    'looks',
    indent(
      table(
        ['loop', 'last look', 'found', 'last requested a run', 'failing'],
        rows.map((l) => [
          l.loop,
          l.lookedAt === null ? '-' : agoWords(l.lookedAt, now),
          found(l),
          l.requestedAt === null ? '-' : agoWords(l.requestedAt, now),
          l.failingSince === null ? '-' : `since ${agoWords(l.failingSince, now)}: ${l.error}`,
        ]),
      ),
    ),
    '',
  ];
};

/**
 * The worker's run requests that Temporal has not taken, when there are any: one refused for good (REFUSED: its
 * schedule is gone, keeper may not start the run) needs an operator; the others go once Temporal answers.
 */
const requests: Section = ({ requests: rows, now }) => {
  if (rows.length === 0) return [];
  return [
    'run requests not taken',
    indent(
      table(
        ['loop', 'failing', 'attempts', 'requested by', 'error'],
        rows.map((r) => [r.loop, `since ${agoWords(r.failingSince, now)}`, r.attempts, r.why, `${r.refused ? 'REFUSED: ' : ''}${r.error}`]),
      ),
    ),
    '',
  ];
};

/** The webhooks and how their deliveries ended; a refused or given-up one is named, with its error. */
const alerts: Section = ({ notifications: n, now }) => {
  const webhooks = webhooksWords(n.webhooks, n.signed);
  if (n.webhooks.length === 0) return [`alerts         ${webhooks}`];
  const base = `${webhooks}: ${n.delivered} delivered, ${n.failed} failed (30 days)`;
  const f = n.lastFailure;
  return [
    `alerts         ${f ? `${base}; last failure ${agoWords(f.finishedAt, now)}: ${f.kind} of ${f.serviceId} to ${f.targetShown}: ${f.error}` : base}`,
  ];
};

/** Whether keeper alone counts crashes on this DB, or ah's reconciler still runs beside it. */
const writers: Section = (s) => {
  const c = otherWriterCondition(s.otherWriter);
  return [`crash counts   ${c ? `WARNING: ${c.summary}` : 'counted by keeper alone'}`];
};

/**
 * Each loop's last result in its unit's words (src/loops/), with how long ago it finished. A row of a loop this
 * keeper has no unit for (another version recorded it) says so.
 */
const lastRuns: Section = (s) => {
  if (s.loops.length === 0) return ['', 'last runs', '  none yet'];
  const words = (l: (typeof s.loops)[number]) => loopNamed(l.loop)?.words(l.result) ?? UNKNOWN_LOOP;
  return [
    '',
    'last runs',
    indent(
      table(
        ['loop', 'finished', 'result'],
        s.loops.map((l) => [l.loop, agoWords(l.finishedAt, s.now), words(l)]),
      ),
    ),
  ];
};

const UNKNOWN_LOOP = 'a loop this keeper does not have (recorded by another version of keeper)';

const SECTIONS: Section[] = [
  header,
  worker,
  services,
  labelProblems,
  hosted,
  engine,
  tenantRuntime,
  pool,
  disk,
  events,
  looks,
  requests,
  alerts,
  writers,
  lastRuns,
];

export function renderStatus(s: StatusView): string {
  return SECTIONS.flatMap((section) => section(s)).join('\n');
}

export function registerStatusCommand(program: Command): void {
  withSettings(program.command('status'))
    .description('services (with their last crash), circuits, databases, environments, pool, disk and the last run of each loop')
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const settings = settingsFrom(cmd);
      const read = await withHost(settings, readStatus);
      const w = read.worker && { ...read.worker, differences: differencesFrom(cmd, settings, read.worker) };
      print({ ...read, worker: w, temporal: temporalSummary(settings, read.worker) }, !!opts.json, renderStatus);
    });
}
