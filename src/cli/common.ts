/** What every keeper command shares: the settings flags, this host's deps, output as table or JSON, exit codes. */
import { Option } from 'commander';
import { Keeper, type OneShot } from '../app/keeper';
import type { HostDeps } from '../host/deps';
import type { Settings } from '../settings';

export { settingsFrom, withSettings } from '../settings';

export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** A failure the operator caused (bad argument, bad setting): exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * Runs `fn` with this host's state DB and engine, no Temporal needed; the DB is closed after. Only the worker
 * creates a state DB: a --db that is not there is a typo, refused with one line (exit 2), nothing created.
 */
export function withHost<T>(settings: Settings, fn: (deps: HostDeps) => Promise<T> | T): Promise<T> {
  return Keeper.with(settings, 'command', (keeper) => fn(keeper.deps));
}

/** Runs `fn` with this host's Keeper in command mode (its state DB, engine and Temporal, as `fn` asks), closed after. */
export function withKeeper<T>(settings: Settings, fn: (keeper: Keeper) => Promise<T> | T): Promise<T> {
  return Keeper.with(settings, 'command', fn);
}

/**
 * withKeeper for a command that hands work reaching the engine to a workflow (run by this host's worker, whose calls
 * have a worker's longer deadlines, one after another): the engine must first answer this command's ping, so that a
 * wedged engine gets its operator one line within seconds ("docker ping: the engine did not answer within 5 s").
 */
export function withAnsweringEngine<T>(settings: Settings, fn: (keeper: Keeper) => Promise<T>): Promise<T> {
  return withKeeper(settings, async (keeper) => {
    void keeper.db; // the state DB first: a --db that is not there is the operator's typo whatever the engine does
    await keeper.engine.ping();
    return fn(keeper);
  });
}

export function jsonOption(): Option {
  return new Option('--json', 'print JSON instead of a table');
}

export function print<T>(data: T, asJson: boolean, human: (d: T) => string): void {
  process.stdout.write(asJson ? JSON.stringify(data, null, 2) + '\n' : human(data) + '\n');
}

/** A plain text table: columns padded to their widest cell. */
export function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** A one-shot run's result as JSON: the result's own fields, and how it ran under `run`. */
export function printOneShot<T extends object>(run: OneShot<T>, asJson: boolean, human: (result: T) => string): void {
  const { result, ...how } = run;
  print({ ...result, run: how }, asJson, () => [human(result), ...describeOneShot(run)].join('\n'));
}

/** How a one-shot run went beyond its result: who ran it, what it finished, what it handed on. */
export function describeOneShot(run: OneShot<unknown>): string[] {
  const lines = [
    `ran by      ${run.ranBy === 'host worker' ? "this host's worker" : `this command's own worker (${run.why})`} on ${run.server}`,
  ];
  for (const f of run.drained?.finished ?? []) lines.push(`finished    ${f.type} ${f.workflowId} (${f.status.toLowerCase()})`);
  for (const h of run.drained?.handedOn ?? []) {
    lines.push(
      `handed on   ${h.type} ${h.workflowId}: waits on its timer; its row keeps the time and the next worker of this host takes it over`,
    );
  }
  return lines;
}
