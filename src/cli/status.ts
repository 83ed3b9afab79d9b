/** `keeper status [--json]`: see src/host/status.ts for what it reads. */
import type { Command } from 'commander';
import { readStatus, type HostStatus } from '../host/status';
import type { Settings } from '../settings';
import { operatorTarget } from '../temporal/client';
import { describeTarget } from '../temporal/connection';
import { isoSeconds } from '../time';
import { jsonOption, print, settingsFrom, table, withHost, withSettings } from './common';

function ago(unixSec: number, nowSec: number): string {
  const s = Math.round(nowSec - unixSec);
  return s < 0 ? `in ${-s}s` : `${s}s ago`;
}

function when(unixSec: number | null, nowSec: number): string {
  return unixSec ? `${isoSeconds(unixSec)} (${ago(unixSec, nowSec)})` : '-';
}


/** Where this host's Temporal is, as configured (no connection is made): address, namespace, TLS, auth kind. */
function temporalSummary(settings: Settings): string {
  const target = operatorTarget(settings);
  return `${describeTarget(target)}${target.embedded ? " (npm start's embedded server)" : ''}`;
}

/** The webhooks and how their deliveries ended; a refused or given-up one is named, with its error. */
function alertsLine(n: HostStatus['notifications'], nowSec: number): string {
  if (n.webhooks.length === 0) return 'no webhooks (--notify-webhook): circuit events reach no one';
  const base = `${n.webhooks.join(', ')}${n.signed ? ' (signed)' : ''}: ${n.delivered} delivered, ${n.failed} failed (30 days)`;
  const f = n.lastFailure;
  return f ? `${base}; last failure ${ago(f.finishedAt, nowSec)}: ${f.kind} of ${f.serviceId} to ${f.targetShown}: ${f.error}` : base;
}

function render(s: HostStatus & { temporal: string }): string {
  const counts = (c: Record<string, number>) => Object.entries(c).map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
  const out = [`host ${s.host}`, `temporal ${s.temporal}`, '', 'services'];
  out.push(
    s.services.length === 0
      ? '  none'
      : table(
          ['service', 'tenant', 'name', 'status', 'crashes', 'circuit', 'retry at', 'opened'],
          s.services.map((v) => [v.id, v.tenantId, v.name, v.status, v.crashesInWindow, v.circuitOpen ? 'OPEN' : 'closed',
            v.circuitOpen ? when(v.circuitRetryAt, s.now) : '-', v.circuitOpenCount]),
        ).replace(/^/gm, '  '),
  );
  out.push('', `databases      ${counts(s.databases)}`, `environments   ${counts(s.environments)}`);
  const registered = s.tenantRuntime.registered === null ? 'engine not answering' : s.tenantRuntime.registered ? 'registered' : 'NOT registered with this engine';
  out.push(`tenant runtime ${s.tenantRuntime.runtime} (${registered}): ${s.tenantRuntime.isolation}`);
  out.push(`pool           ${s.pool.templates.map((t) => `${t.name} ${t.ready}`).join(', ')} (total ${s.pool.total}/${s.pool.maxTotal})`);
  out.push('', `disk (${s.disk.level}; warn ${s.disk.warnAt}%, block ${s.disk.blockAt}%)`);
  out.push(table(['path', 'role', 'used'], s.disk.paths.map((p) => [p.path, p.role, p.usedPercent === null ? p.message : `${p.usedPercent.toFixed(1)}%`])).replace(/^/gm, '  '));
  out.push('', `events         ${s.events.state}: ${s.events.detail}`);
  out.push(`alerts         ${alertsLine(s.notifications, s.now)}`);
  out.push('', 'last runs');
  out.push(
    s.loops.length === 0
      ? '  none yet'
      : table(['loop', 'finished', 'result'], s.loops.map((l) => [l.loop, when(l.finishedAt, s.now), JSON.stringify(l.result).slice(0, 100)])).replace(/^/gm, '  '),
  );
  return out.join('\n');
}

export function registerStatusCommand(program: Command): void {
  withSettings(program.command('status'))
    .description('services, circuits, databases, environments, pool, disk and the last run of each loop')
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const settings = settingsFrom(cmd);
      const status = { ...(await withHost(settings, readStatus)), temporal: temporalSummary(settings) };
      print(status, !!opts.json, render);
    });
}
