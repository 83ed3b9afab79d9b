/**
 * `keeper status [--json]`: see src/host/status.ts for what it reads. The text is one function per section, in
 * SECTIONS' order: a new section is one more function there. `--json` prints the data as read, loop results raw.
 */
import type { Command } from 'commander';
import { readStatus, type HostStatus } from '../host/status';
import type { Settings } from '../settings';
import { operatorTarget } from '../temporal/client';
import { describeTarget } from '../temporal/connection';
import { agoWords, isoSeconds } from '../time';
import { lastCrashWords, loopResultWords, webhooksWords } from './words';
import { jsonOption, print, settingsFrom, table, withHost, withSettings } from './common';

type StatusView = HostStatus & { temporal: string };
type Section = (s: StatusView) => string[];

const indent = (text: string) => text.replace(/^/gm, '  ');

function when(unixSec: number | null, nowSec: number): string {
  return unixSec ? `${isoSeconds(unixSec)} (${agoWords(unixSec, nowSec)})` : '-';
}

/** Where this host's Temporal is, as configured (no connection is made): address, namespace, TLS, auth kind. */
function temporalSummary(settings: Settings): string {
  const target = operatorTarget(settings);
  return `${describeTarget(target)}${target.embedded ? " (npm start's embedded server)" : ''}`;
}

const header: Section = (s) => [`host ${s.host}`, `temporal ${s.temporal}`];

const services: Section = (s) => {
  if (s.services.length === 0) return ['', 'services', '  none'];
  const rows = s.services.map((v) => [
    v.id, v.tenantId, v.name, v.status, v.crashesInWindow, v.circuitOpen ? 'OPEN' : 'closed', v.circuitOpen ? when(v.circuitRetryAt, s.now) : '-',
    v.circuitOpenCount, v.lastCrash ? lastCrashWords(v.lastCrash, s.now) : '-',
  ]);
  return ['', 'services', indent(table(['service', 'tenant', 'name', 'status', 'crashes', 'circuit', 'retry at', 'opened', 'last crash'], rows))];
};

const hosted: Section = (s) => {
  const counts = (c: Record<string, number>) => Object.entries(c).map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
  return ['', `databases      ${counts(s.databases)}`, `environments   ${counts(s.environments)}`];
};

const tenantRuntime: Section = ({ tenantRuntime: r }) => {
  const registered = r.registered === null ? 'engine not answering' : r.registered ? 'registered' : 'NOT registered with this engine';
  return [`tenant runtime ${r.runtime} (${registered}): ${r.isolation}`];
};

const pool: Section = ({ pool: p }) => [`pool           ${p.templates.map((t) => `${t.name} ${t.ready}`).join(', ')} (total ${p.total}/${p.maxTotal})`];

const disk: Section = ({ disk: d }) => [
  '', `disk (${d.level}; warn ${d.warnAt}%, block ${d.blockAt}%)`,
  indent(table(['path', 'role', 'used'], d.paths.map((p) => [p.path, p.role, p.usedPercent === null ? p.message : `${p.usedPercent.toFixed(1)}%`]))),
];

const events: Section = (s) => ['', `events         ${s.events.state}: ${s.events.detail}`];

/** The webhooks and how their deliveries ended; a refused or given-up one is named, with its error. */
const alerts: Section = ({ notifications: n, now }) => {
  const webhooks = webhooksWords(n.webhooks, n.signed);
  if (n.webhooks.length === 0) return [`alerts         ${webhooks}`];
  const base = `${webhooks}: ${n.delivered} delivered, ${n.failed} failed (30 days)`;
  const f = n.lastFailure;
  return [`alerts         ${f ? `${base}; last failure ${agoWords(f.finishedAt, now)}: ${f.kind} of ${f.serviceId} to ${f.targetShown}: ${f.error}` : base}`];
};

/** Each loop's last result in words (src/cli/words.ts), with how long ago it finished. */
const lastRuns: Section = (s) => {
  if (s.loops.length === 0) return ['', 'last runs', '  none yet'];
  return ['', 'last runs', indent(table(['loop', 'finished', 'result'], s.loops.map((l) => [l.loop, agoWords(l.finishedAt, s.now), loopResultWords(l.loop, l.result)])))];
};

const SECTIONS: Section[] = [header, services, hosted, tenantRuntime, pool, disk, events, alerts, lastRuns];

export function renderStatus(s: StatusView): string {
  return SECTIONS.flatMap((section) => section(s)).join('\n');
}

export function registerStatusCommand(program: Command): void {
  withSettings(program.command('status'))
    .description('services (with their last crash), circuits, databases, environments, pool, disk and the last run of each loop')
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const settings = settingsFrom(cmd);
      const status = { ...(await withHost(settings, readStatus)), temporal: temporalSummary(settings) };
      print(status, !!opts.json, renderStatus);
    });
}
