/** `keeper health [--json]`: the host health workflow, this host's engine and DB read through Temporal. */
import type { Command } from 'commander';
import { ids } from '../ids';
import { hostHealth } from '../workflows/hostHealth';
import type { HostHealth } from '../contracts/health';
import { jsonOption, printOneShot, settingsFrom, withAnsweringEngine, withSettings } from './common';

export function registerHealthCommand(program: Command): void {
  withSettings(program.command('health'))
    .description("run the host health workflow: this host's Docker engine and state DB, read through Temporal")
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const settings = settingsFrom(cmd);
      const run = await withAnsweringEngine(settings, (k) => k.runWorkflowOnce(hostHealth, ids.health(settings.hostId), []));
      printOneShot(run, !!opts.json, (h: HostHealth) =>
        [
          `task queue  ${h.taskQueue}`,
          `docker      ${h.engine.reachable ? `${h.engine.serverVersion} (API ${h.engine.apiVersion}), ${h.engine.containersRunning} running, root ${h.engine.dockerRootDir}` : `unreachable: ${h.engine.error}`}`,
          `state DB    ah ${h.schema.ah}, keeper migrations ${h.schema.keeper}`,
        ].join('\n'),
      );
    });
}
