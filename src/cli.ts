/**
 * The `keeper` command. Exit codes: 0 ok, 1 failure, 2 usage (a bad argument or setting). Errors are one line.
 */
import { Command, CommanderError, Help } from 'commander';
import { SETTINGS_HELP_GROUP, SettingsError } from './settings';
import { EXIT_FAILURE, EXIT_USAGE, UsageError, settingsFrom, withSettings } from './cli/common';
import { StateDbMissingError } from './app/keeper';
import { registerCircuitCommand } from './cli/circuit';
import { registerCrashesCommand } from './cli/crashes';
import { registerGcCommand } from './cli/gc';
import { registerHealthCommand } from './cli/health';
import { registerPoolCommand } from './cli/pool';
import { registerReconcileCommand } from './cli/reconcile';
import { registerScheduleCommands } from './cli/schedules';
import { registerServiceCommands } from './cli/service';
import { registerStatusCommand } from './cli/status';
import { keeperVersion } from './version';
import { registerUninstallCommand } from './cli/uninstall';
import { registerBackupCommands } from './cli/backup';
import { firstLine } from './text';

export function buildProgram(): Command {
  const program = new Command('keeper')
    .description("keeper: a Docker host's reconciler, garbage collector and warm pool as durable Temporal workflows")
    .version(keeperVersion(), '-V, --version', "print keeper's version")
    .exitOverride()
    .configureHelp({ groupItems: settingsLast })
    // One line, keeper's prefix instead of commander's "error:"; commander names the flag or variable and the value.
    .configureOutput({ outputError: (text, write) => write(`keeper: ${firstLine(text.replace(/^error: /, ''))}\n`) });

  withSettings(program.command('worker'))
    .description("run this host's worker (npm start): embedded Temporal unless TEMPORAL_ADDRESS is set")
    .action(async (_opts, cmd: Command) => {
      const { runWorkerProcess } = await import('./worker');
      await runWorkerProcess(settingsFrom(cmd));
    });
  registerStatusCommand(program);
  registerHealthCommand(program);
  registerPoolCommand(program);
  registerScheduleCommands(program);
  registerServiceCommands(program);
  registerGcCommand(program);
  registerReconcileCommand(program);
  registerCircuitCommand(program);
  registerCrashesCommand(program);
  registerBackupCommands(program);
  registerUninstallCommand(program);
  return program;
}

/** In a command's help, its own options come first, then the settings every command takes. */
function settingsLast<T>(this: Help, unsorted: T[], visible: T[], groupOf: (item: T) => string): Map<string, T[]> {
  const groups = Help.prototype.groupItems.call(this, unsorted as never[], visible as never[], groupOf as never) as Map<string, T[]>;
  const settings = groups.get(SETTINGS_HELP_GROUP);
  if (settings) {
    groups.delete(SETTINGS_HELP_GROUP);
    groups.set(SETTINGS_HELP_GROUP, settings);
  }
  return groups;
}

export async function main(argv = process.argv): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      return err.exitCode === 0 ? 0 : EXIT_USAGE;
    }
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`keeper: ${firstLine(message)}\n`);
    return err instanceof SettingsError || err instanceof UsageError || err instanceof StateDbMissingError ? EXIT_USAGE : EXIT_FAILURE;
  }
}

if (require.main === module) {
  main().then((code) => process.exit(code));
}
