import type { Command } from 'commander';
import { ids } from '../shared';
import type { HostHealth } from '../workflows/hostHealth';
import { jsonOption, print, settingsFrom, withSettings } from './common';

export function registerHealthCommand(program: Command): void {
  withSettings(program.command('health'))
    .description("run the host health workflow: this host's Docker engine and state DB, read through Temporal")
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const settings = settingsFrom(cmd);
      const { runWorkflowOnce } = await import('../temporal/run-once');
      const health = await runWorkflowOnce<HostHealth>(settings, 'hostHealth', ids.health(settings.hostId));
      print(health, !!opts.json, (h: HostHealth) =>
        [
          `task queue  ${h.taskQueue}`,
          `docker      ${h.engine.reachable ? `${h.engine.serverVersion} (API ${h.engine.apiVersion}), ${h.engine.containersRunning} running, root ${h.engine.dockerRootDir}` : `unreachable: ${h.engine.error}`}`,
          `state DB    ah ${h.schema.ah}, keeper migrations ${h.schema.keeper}`,
        ].join('\n'),
      );
    });
}
