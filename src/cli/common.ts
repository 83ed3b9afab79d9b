/** What every keeper command shares: the settings flags, output as table or JSON, and exit codes. */
import { Option } from 'commander';

export { settingsFrom, withSettings } from '../settings';

export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** A failure the operator caused (bad argument, bad setting): exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export function jsonOption(): Option {
  return new Option('--json', 'print JSON instead of a table');
}

export function print(data: unknown, asJson: boolean, human: (d: any) => string): void {
  process.stdout.write(asJson ? JSON.stringify(data, null, 2) + '\n' : human(data) + '\n');
}

/** A plain text table: columns padded to their widest cell. */
export function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd()).join('\n');
}
