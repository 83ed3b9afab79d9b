/** `keeper crashes <serviceId> [--limit N] [--json]`: why a service died, newest first, with its last log lines. */
import { Option, type Command } from 'commander';
import { serviceCrashes, type CrashRecordRow, type ServiceCrashes } from '../host/crashes';
import { isoSeconds } from '../time';
import { jsonOption, print, settingsFrom, UsageError, withHost, withSettings } from './common';

const DEFAULT_LIMIT = 10;

function when(d: CrashRecordRow): string {
  return d.diedAtMs !== null ? isoSeconds(Math.floor(d.diedAtMs / 1000)) : `time unknown (recorded ${isoSeconds(d.recordedAt)})`;
}

function renderDeath(d: CrashRecordRow): string[] {
  const dated = d.datedBy ? `, dated by ${d.datedBy}${d.datedBy === 'spread' ? ' (estimated)' : ''}` : '';
  const lines = [
    `${when(d)}  ${d.reason}${d.expected ? '  (expected exit: not counted)' : ''}`,
    `  seen by ${d.seenBy}${dated}, container ${d.containerId.slice(0, 12)}`,
  ];
  if (d.logTail) lines.push(...d.logTail.split('\n').map((l) => `  | ${l}`));
  if (d.logNote) lines.push(`  (log: ${d.logNote})`);
  return lines;
}

function render(c: ServiceCrashes): string {
  if (c.deaths.length === 0) return `${c.serviceId}: no crash recorded`;
  const header = `${c.serviceId}: ${c.deaths.length} most recent death${c.deaths.length === 1 ? '' : 's'}, newest first`;
  return [header, ...c.deaths.flatMap((d) => ['', ...renderDeath(d)])].join('\n');
}

function parseLimit(raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw new UsageError(`invalid --limit "${raw}": use an integer from 1 to 1000`);
  return n;
}

export function registerCrashesCommand(program: Command): void {
  withSettings(program.command('crashes <serviceId>'))
    .description("a service's recent deaths: exit code, OOM kill, signal, time, and the dead run's last log lines")
    .addOption(new Option('--limit <n>', 'deaths to show').default(String(DEFAULT_LIMIT)))
    .addOption(jsonOption())
    .action(async (serviceId: string, opts: { limit: string; json?: boolean }, cmd: Command) => {
      const limit = parseLimit(opts.limit);
      const crashes = await withHost(settingsFrom(cmd), (deps) => serviceCrashes(deps, serviceId, limit));
      print(crashes, !!opts.json, render);
    });
}
