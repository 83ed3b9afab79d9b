/**
 * `keeper backup <file>`: a consistent online copy of the state DB (SQLite's backup API), safe while the worker
 * and ah write. `keeper restore <backup> --db <path>`: puts a backup in place of a state DB that is not there
 * (the worker stopped and the old DB moved aside); it never overwrites one. See docs/operations.md.
 */
import type { Command } from 'commander';
import { checkBackup, copySqliteOnline, refuseLiveDb, StateDbError, type CopyResult } from '../app/keeper';
import { jsonOption, print, settingsFrom, UsageError, withSettings } from './common';

function words(verb: string, r: CopyResult): string {
  return `${verb} ${r.path}: ${r.bytes} bytes, ${r.pages} pages of ${r.pageSizeBytes} bytes`;
}

/** A refusal that names a file the operator gave is a usage error; a failed copy is a failure. */
async function asUsage<T>(fn: () => Promise<T> | T): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof StateDbError && /exists|does not exist|is not a state DB/.test(err.message)) throw new UsageError(err.message);
    throw err;
  }
}

export function registerBackupCommands(program: Command): void {
  withSettings(program.command('backup'))
    .description('copy the state DB (--db) to <file>, online and consistent, while the worker and ah write; never overwrites <file>')
    .argument('<file>', 'the copy to write; it must not exist')
    .addOption(jsonOption())
    .action(async (file: string, opts: { json?: boolean }, cmd: Command) => {
      const settings = settingsFrom(cmd);
      const result = await asUsage(() => copySqliteOnline(settings.db, file));
      print(result, !!opts.json, (r) => words('wrote', r));
    });

  withSettings(program.command('restore'))
    .description('put <backup> in place as the state DB (--db), which must not exist: stop the worker and move the old DB aside first')
    .argument('<backup>', 'a file written by keeper backup')
    .addOption(jsonOption())
    .action(async (backup: string, opts: { json?: boolean }, cmd: Command) => {
      const settings = settingsFrom(cmd);
      const result = await asUsage(async () => {
        refuseLiveDb(settings.db);
        checkBackup(backup);
        return copySqliteOnline(backup, settings.db);
      });
      print(result, !!opts.json, (r) => words('restored', r));
    });
}
