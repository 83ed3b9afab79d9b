/**
 * keeper's log lines: JSON by default (one object a line, with the host), or plain text for people. A line
 * written from inside an activity also names its workflow run and activity, so it leads to the run in the UI.
 */
import { Context } from '@temporalio/activity';
import type { LogFormat } from './settings';

export type Level = 'debug' | 'info' | 'warn' | 'error';
export type Fields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: Fields): void;
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
  child(fields: Fields): Logger;
}

/** The ids of the activity whose code is running (none outside one): Temporal keeps them per async context. */
export function activityLogFields(): Fields {
  let info: Context['info'];
  try {
    info = Context.current().info;
  } catch {
    return {};
  }
  return {
    ...(info.workflowExecution ? { workflowId: info.workflowExecution.workflowId, runId: info.workflowExecution.runId } : {}),
    workflowType: info.workflowType,
    activityId: info.activityId,
    activityType: info.activityType,
    attempt: info.attempt,
  };
}

export function createLogger(
  format: LogFormat,
  base: Fields = {},
  write: (line: string) => void = (line) => process.stderr.write(line + '\n'),
): Logger {
  const emit = (level: Level, msg: string, fields: Fields = {}) => {
    if (level === 'debug' && !process.env.KEEPER_DEBUG) return;
    const all = { ...base, ...activityLogFields(), ...fields };
    if (format === 'json') {
      write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...all }));
    } else {
      const extra = Object.entries(all).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
      write(`${new Date().toISOString().slice(11, 19)} ${level.toUpperCase().padEnd(5)} ${msg} ${extra.join(' ')}`.trimEnd());
    }
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger(format, { ...base, ...fields }, write),
  };
}
