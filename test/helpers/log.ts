/** A logger whose lines a test reads: what keeper injects instead of writing to stderr. */
import { activityLogContext } from '../../src/activities/log-context';
import { createLogger, type Logger } from '../../src/log';

export interface CapturedLog {
  log: Logger;
  lines: string[];
  /** The lines as parsed JSON objects. */
  records(): Record<string, unknown>[];
}

/** Lines go to `lines` (a new array unless given, so a test can collect several loggers' lines in one). */
export function captureLog(lines: string[] = [], fields: Record<string, unknown> = {}): CapturedLog {
  const log = createLogger({ format: 'json', fields, write: (line) => void lines.push(line), context: activityLogContext });
  return { log, lines, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}
