/**
 * `keeper gc --once [--dry-run] [--json]`: one sweep of this host, run as the gcSweep workflow, printed per
 * class. A dry run removes nothing and lists exactly what a real sweep would remove now. Exit code 1 when a
 * class could not be swept or a removal failed (the output says which), 2 for bad usage.
 */
import type { Command } from 'commander';
import type { GcClassResult, GcSweepResult } from '../contracts/gc';
import ms from 'ms';
import { ids } from '../ids';
import { gcClassWords } from '../host/gc/registry';
import { gcSweep } from '../workflows/gcSweep';
import { jsonOption, printOneShot, settingsFrom, table, UsageError, withAnsweringEngine, withSettings } from './common';

export function registerGcCommand(program: Command): void {
  withSettings(program.command('gc'))
    .description(`sweep this host once: ${gcClassWords()}`)
    .option('--once', 'run one sweep now, as a workflow (the worker also sweeps on its gc schedule)')
    .option('--dry-run', 'remove nothing: print what a sweep would remove now')
    .addOption(jsonOption())
    .action(async (opts: { once?: boolean; dryRun?: boolean; json?: boolean }, cmd: Command) => {
      if (!opts.once && !opts.dryRun) throw new UsageError('gc needs --once or --dry-run (the worker sweeps on its own schedule)');
      const settings = settingsFrom(cmd);
      const dryRun = !!opts.dryRun;
      const workflowId = ids.once(settings.hostId, dryRun ? 'gc-dry-run' : 'gc', Date.now());
      const run = await withAnsweringEngine(settings, (k) => k.runWorkflowOnce(gcSweep, workflowId, [{ dryRun }]));
      printOneShot(run, !!opts.json, formatSweep);
      const { failed, classErrors } = run.result.totals;
      if (failed > 0 || classErrors > 0) {
        throw new Error(`gc: ${failed} removal(s) failed and ${classErrors} class(es) could not be swept; see above`);
      }
    });
}

export function formatSweep(r: GcSweepResult): string {
  const head = r.dryRun
    ? `gc dry run: ${r.totals.planned} to remove, nothing removed`
    : `gc sweep: ${r.totals.removed} removed, ${r.totals.failed} failed`;
  const rows = r.classes.map((c) => [
    c.class,
    r.dryRun ? c.planned.length : c.removed.length,
    c.failed.length,
    c.skipped.length,
    keptText(c),
    c.error ?? '',
  ]);
  const summary = table(['class', r.dryRun ? 'to remove' : 'removed', 'failed', 'skipped', 'kept', 'error'], rows);
  const items = r.classes.flatMap((c) => [
    ...(r.dryRun ? c.planned : c.removed).map((i) => [c.class, r.dryRun ? 'remove' : 'removed', i.name, ms(i.ageSeconds * 1000), i.reason]),
    ...c.failed.map((f) => [c.class, 'failed', f.name, '', f.error]),
    ...c.skipped.map((f) => [c.class, 'skipped', f.name, '', f.error]),
  ]);
  return items.length === 0
    ? `${head}\n\n${summary}`
    : `${head}\n\n${summary}\n\n${table(['class', 'action', 'name', 'age', 'reason'], items)}`;
}

function keptText(c: GcClassResult): string {
  return Object.entries(c.kept)
    .map(([why, n]) => `${why} ${n}`)
    .join(', ');
}
