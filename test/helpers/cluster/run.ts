/**
 * Running the cluster's tools: argument arrays (never a shell string), the caller's environment (so every
 * process carries the suite's run tag), a bound on every wait, and failures as one line with the output's tail.
 * No vitest imports.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { waitFor } from '../fixtures';

export interface RunOptions {
  timeoutMs: number;
  cwd?: string;
  /** Run as this user (the cluster runs PostgreSQL as `postgres`). */
  user?: { uid: number; gid: number };
  /** Added to the inherited environment. */
  env?: Record<string, string>;
}

/** The last `lines` non-empty lines of `text`, joined into one line of at most `maxChars` characters. */
export function tailLine(text: string, lines = 3, maxChars = 600): string {
  const tail = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-lines)
    .join(' | ');
  return tail.length > maxChars ? `…${tail.slice(-maxChars)}` : tail;
}

/** The tail of a log file as one line, or a note that it cannot be read. */
export function logTail(file: string, lines = 3): string {
  try {
    return `${file}: ${tailLine(fs.readFileSync(file, 'utf8'), lines) || '(empty)'}`;
  } catch {
    return `${file}: (unreadable)`;
  }
}

/** Runs `cmd args`; resolves with its stdout, rejects with `<what> failed (<why>): <tail of its output>`. */
export function run(what: string, cmd: string, args: string[], opts: RunOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      {
        encoding: 'utf8',
        timeout: opts.timeoutMs,
        killSignal: 'SIGKILL',
        maxBuffer: 16 * 1024 * 1024,
        cwd: opts.cwd,
        uid: opts.user?.uid,
        gid: opts.user?.gid,
        env: { ...process.env, ...opts.env },
      },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: number | string };
        const why = e.killed ? `no exit within ${opts.timeoutMs} ms` : typeof e.code === 'number' ? `exit ${e.code}` : e.message;
        reject(new Error(`${what} failed (${why}): ${tailLine(`${stdout}\n${stderr}`) || '(no output)'}`));
      },
    );
  });
}

/** Waits until process `pid` has gone, at most `timeoutMs`. */
export async function waitForExit(what: string, pid: number, timeoutMs: number): Promise<void> {
  await waitFor(`${what} (pid ${pid}) to exit`, () => !isAlive(pid), timeoutMs);
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Like Promise.all, but waits for every promise to settle before it rejects: nothing is left running. */
export async function settleAll<T extends readonly unknown[]>(promises: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const results = await Promise.allSettled(promises as readonly Promise<unknown>[]);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
}
