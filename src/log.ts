/**
 * keeper's log lines, written by pino: JSON (one object a line) or plain text for people. A logger is made once,
 * by the composition root, and injected; its `context` adds fields known only when a line is written (in a
 * worker: the ids of the activity whose code is running, so a line leads to its run in the UI).
 */
import pino, { type DestinationStream } from 'pino';
import type { LogFormat, LogLevel } from './settings';

export type Level = LogLevel;
export type Fields = Record<string, unknown>;

/** keeper's call shape, message first: a pino logger is one (see `messageFirst`). */
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
  /** Where a finished line (without its newline) goes; stderr by default. */
  write?: (line: string) => void;
  /** Fields read when a line is written. */
  context?: () => Fields;
  /** The least severe lines written (--log-level); info by default. */
  level?: Level;
}

export function createLogger(opts: LoggerOptions): Logger {
  return pino(
    {
      level: opts.level ?? 'info',
      base: opts.fields ?? {}, // no pid or hostname: the host id names the machine
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      ...(opts.context ? { mixin: opts.context } : {}),
      hooks: { logMethod: messageFirst },
    },
    destination(opts),
  );
}

/** keeper's callers write `log.warn(msg, fields)`; pino takes `(fields, msg)`. */
function messageFirst(this: pino.Logger, args: Parameters<pino.LogFn>, method: pino.LogFn): void {
  const [msg, fields] = args as unknown[];
  if (typeof msg === 'string' && typeof fields === 'object' && fields !== null) method.call(this, fields, msg);
  else method.apply(this, args);
}

function destination(opts: LoggerOptions): DestinationStream {
  const pretty = opts.format === 'pretty';
  if (!opts.write && !pretty) return process.stderr; // through process.stderr.write, which a test may wrap
  const write = opts.write ?? ((line: string) => void process.stderr.write(line + '\n'));
  return { write: (json: string) => write(pretty ? prettyLine(JSON.parse(json) as Fields) : json.trimEnd()) };
}

/** `12:00:01 WARN  message key=value …`: the time of day, the level, the message, then the fields in order. */
function prettyLine({ time, level, msg, ...fields }: Fields): string {
  const extra = Object.entries(fields).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return `${String(time).slice(11, 19)} ${String(level).toUpperCase().padEnd(5)} ${String(msg)} ${extra.join(' ')}`.trimEnd();
}

/** A logger that writes nothing: benchmarks and tests that assert on results, not lines. */
export const silentLogger: Logger = pino({ level: 'silent' });
