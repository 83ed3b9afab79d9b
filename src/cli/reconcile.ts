/** `keeper reconcile --once [--json]`: one reconcile tick, run as a workflow, and its summary. */
import type { Command } from 'commander';
import { ids } from '../ids';
import { reconcileTick } from '../workflows/reconcileTick';
import type { TickSummary } from '../contracts/reconcile';
import { jsonOption, printOneShot, settingsFrom, UsageError, withKeeper, withSettings } from './common';

export function registerReconcileCommand(program: Command): void {
  withSettings(program.command('reconcile'))
    .description('run one reconcile tick now, as a workflow (the schedule runs them every --reconcile-interval)')
    .option('--once', 'run a single tick and print its summary')
    .addOption(jsonOption())
    .action(async (opts: { once?: boolean; json?: boolean }, cmd: Command) => {
      if (!opts.once)
        throw new UsageError('reconcile needs --once (the reconcile schedule, the event watcher and the looks start the other ticks)');
      const settings = settingsFrom(cmd);
      const run = await withKeeper(settings, (k) =>
        k.runWorkflowOnce(reconcileTick, ids.once(settings.hostId, 'reconcile', Date.now()), []),
      );
      printOneShot(run, !!opts.json, formatSummary);
    });
}

export function formatSummary(s: TickSummary): string {
  const lines = [
    `docker      ${s.dockerReachable ? 'reachable' : 'UNREACHABLE: only DB steps ran'}`,
    `checked     ${s.checked} (inspected ${s.inspected}, transient errors ${s.transientErrors})`,
    `crashes     ${s.crashes} in ${s.crashedServices} service(s); circuits opened ${s.opened}, expired ${s.circuitsExpired}`,
    `services    back up ${s.recovered}, unhealthy restarted ${s.unhealthyRestarted}, gone→stopped ${s.missing}, stale deploys failed ${s.failedDeploys}`,
    `databases   unavailable ${s.databasesUnavailable}, ready again ${s.databasesReady}`,
    `envs        stopped ${s.environmentsStopped}, leases expired ${s.expiredLeases}, containers stopped ${s.containersStopped}, stale creates failed ${s.failedEnvCreates}`,
  ];
  for (const b of s.splitBrain)
    lines.push(`split-brain container ${b.containerId} claims service ${b.serviceId} (DB has "${b.dbContainerId}")`);
  for (const p of s.badInput) lines.push(`bad input   ${p.subject}: ${p.problem}`);
  return lines.join('\n');
}
