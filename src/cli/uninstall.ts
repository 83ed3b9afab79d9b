/**
 * `keeper uninstall [--circuits close|hand-over|leave] [--alerts drop|leave] [--purge-state] [--host-id ID]`: the
 * command's options and words; the work is src/app/uninstall.ts's.
 */
import { Option, type Command } from 'commander';
import { UninstallRefused, uninstallHost, type UninstallChoices, type UninstallReport } from '../app/uninstall';
import { taskQueueFor } from '../ids';
import { ALERT_CHOICES, CIRCUIT_CHOICES, type InFlight } from '../policy/uninstall';
import type { Settings } from '../settings';
import { agoWords, isoSeconds, unixSeconds } from '../time';
import { jsonOption, print, settingsFrom, UsageError, withSettings } from './common';

export type { UninstallReport } from '../app/uninstall';

type Choices = UninstallChoices & { json?: boolean };

export function registerUninstallCommand(program: Command): void {
  withSettings(program.command('uninstall'))
    .description("remove this host id's schedules and runs; choose what happens to open circuits and pending alerts")
    .addOption(
      new Option(
        '--circuits <choice>',
        'running circuit workflows: close them now, hand them over (terminate; the DB row keeps the retry time), or leave them running',
      ).choices(CIRCUIT_CHOICES),
    )
    .addOption(new Option('--alerts <choice>', 'pending alerts: drop them (terminate), or leave them running').choices(ALERT_CHOICES))
    .option('--purge-state', "also drop keeper's own keeper_* tables from the state DB (never ah's)")
    .addOption(jsonOption())
    .action(async (opts: Choices, cmd: Command) => {
      const settings = settingsFrom(cmd);
      const report = await uninstallHost(settings, opts).catch((err: unknown) => {
        if (!(err instanceof UninstallRefused)) throw err;
        const flight = err.inFlight;
        if (flight) print({ hostId: err.hostId, inFlight: flight }, !!opts.json, () => inFlightWords(flight, err.hostId));
        throw new UsageError(err.message);
      });
      print(report, !!opts.json, (r) => reportWords(r, settings));
    });
}

function retryWords(retryAt: number | null): string {
  return retryAt === null ? 'no retry time' : `retries at ${isoSeconds(retryAt)} (${agoWords(retryAt, unixSeconds())})`;
}

function inFlightWords(f: InFlight, host: string): string {
  const lines = [`in flight for host ${host}:`];
  for (const c of f.circuits)
    lines.push(
      `  circuit ${c.serviceId}  open, ${retryWords(c.retryAt)}, ${c.workflowId ? `workflow ${c.workflowId}` : 'no workflow (the row keeps the time)'}`,
    );
  for (const id of f.strayCircuitWorkflows) lines.push(`  circuit workflow ${id}  running, its row no longer open`);
  for (const id of f.alerts) lines.push(`  alert ${id}  pending delivery`);
  for (const id of f.loopRuns) lines.push(`  loop run ${id}  running (stopped by uninstall: its steps are idempotent)`);
  return lines.join('\n');
}

function reportWords(r: UninstallReport, settings: Settings): string {
  if (r.nothingToRemove) return `nothing to remove for host ${r.hostId}: no schedules, no workflows, no keeper state of it`;
  const queue = taskQueueFor(r.hostId);
  const lines = [`host ${r.hostId} (task queue ${queue})`];
  if (r.schedulesDeleted.length) lines.push(`schedules deleted  ${r.schedulesDeleted.join(', ')}`);
  if (r.loopRunsStopped.length) lines.push(`loop runs stopped  ${r.loopRunsStopped.join(', ')}`);
  for (const c of r.circuits.closed) lines.push(`circuit ${c.serviceId}  ${c.status}`);
  for (const id of r.circuits.handedOver)
    lines.push(`circuit ${id}  handed over: workflow terminated; the state DB row keeps its retry time for whatever runs next`);
  for (const id of r.circuits.left) lines.push(`circuit ${id}  left running: it needs a worker polling ${queue}`);
  for (const c of r.circuits.rowsOnly)
    lines.push(`circuit ${c.serviceId}  open in the state DB with no workflow: ${retryWords(c.retryAt)}; whatever runs next recovers it`);
  for (const id of r.alerts.dropped) lines.push(`alert ${id}  dropped`);
  for (const id of r.alerts.left) lines.push(`alert ${id}  left running: it needs a worker polling ${queue}`);
  if (r.state?.hostForgotten) lines.push(`host id            forgotten in ${settings.db}`);
  if (r.state?.tablesDropped.length)
    lines.push(`keeper state       dropped ${r.state.tablesDropped.length} keeper_* tables; ah's tables untouched`);
  return lines.join('\n');
}
