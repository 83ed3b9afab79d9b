/**
 * keeper's log lines: JSON (one object a line) or plain text for people. A logger is made once, by the
 * composition root, and injected; its `context` adds fields known only when a line is written (in a worker:
 * the ids of the activity whose code is running, so a line leads to its run in the UI).
 */
import type { LogFormat, LogLevel } from './settings';

export type Level = LogLevel;
const SEVERITY: Record<Level, number> = { debug: 0, info: 1, warn: 2, error: 3 };
export type Fields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: Fields): void;
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
  child(fields: Fields): Logger;
}

export interface LoggerOptions {
  format: LogFormat;
  /** Fields on every line, e.g. the host. */
  fields?: Fields;
  /** Where a finished line goes; stderr by default. */
  write?: (line: string) => void;
  /** Fields read when a line is written. */
  context?: () => Fields;
  /** The least severe lines written (--log-level); info by default. */
  level?: Level;
}

export function createLogger(opts: LoggerOptions): Logger {
  const write = opts.write ?? ((line: string) => void process.stderr.write(line + '\n'));
  const emit = (level: Level, msg: string, fields: Fields = {}) => {
    if (SEVERITY[level] < SEVERITY[opts.level ?? 'info']) return;
    const all = { ...opts.fields, ...opts.context?.(), ...fields };
    write(opts.format === 'json' ? JSON.stringify({ time: new Date().toISOString(), level, msg, ...all }) : prettyLine(level, msg, all));
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger({ ...opts, fields: { ...opts.fields, ...fields } }),
  };
}

function prettyLine(level: Level, msg: string, fields: Fields): string {
  const extra = Object.entries(fields).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return `${new Date().toISOString().slice(11, 19)} ${level.toUpperCase().padEnd(5)} ${msg} ${extra.join(' ')}`.trimEnd();
}

/** A logger that writes nothing: benchmarks and tests that assert on results, not lines. */
export const silentLogger: Logger = createLogger({ format: 'json', write: () => undefined });
