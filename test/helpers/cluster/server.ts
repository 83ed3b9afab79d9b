/**
 * The temporal-server process: started on the config server-config.ts wrote, watched until it answers, killed
 * (SIGKILL, as a crash) or stopped (SIGTERM, then SIGKILL after a bound). Its output goes to DIR/server.log,
 * appended across restarts. No vitest imports.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { logTail } from './run';

export interface ServerProcess {
  logFile: string;
  /** Starts the server and waits, at most `timeoutMs`, until `answers` says it serves. */
  start(answers: () => Promise<boolean>, timeoutMs: number): Promise<void>;
  /** SIGKILL, as a crash would; resolves once the process has exited. */
  kill(): Promise<void>;
  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

interface Running {
  child: ChildProcess;
  exited: Promise<string>;
}

function launch(binary: string, rootDir: string, logFile: string): Running {
  const log = fs.openSync(logFile, 'a', 0o600);
  try {
    const child = spawn(binary, ['--root', rootDir, '--config', 'config', '--env', 'development', '--allow-no-auth', 'start'], {
      cwd: rootDir,
      stdio: ['ignore', log, log],
    });
    // A binary that cannot be spawned emits 'error' and never 'exit'.
    const exited = new Promise<string>((resolve) => {
      child.once('exit', (code, signal) => resolve(signal ? `signal ${signal}` : `exit ${code}`));
      child.once('error', (err) => resolve(err.message));
    });
    return { child, exited };
  } finally {
    fs.closeSync(log);
  }
}

/** Resolves when `answers` does, rejects when the process exits first or `timeoutMs` passes. */
async function waitUntilServing(running: Running, answers: () => Promise<boolean>, timeoutMs: number, logFile: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exit: string | undefined;
  void running.exited.then((how) => (exit = how));
  for (;;) {
    if (exit) throw new Error(`temporal-server exited (${exit}) before it served; ${logTail(logFile)}`);
    if (await answers().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`temporal-server did not serve within ${timeoutMs} ms; ${logTail(logFile)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export function serverProcess(binary: string, rootDir: string): ServerProcess {
  const logFile = path.join(rootDir, 'server.log');
  let running: Running | undefined;
  const signalAndWait = async (signal: NodeJS.Signals, graceMs: number) => {
    if (!running) return;
    const { child, exited } = running;
    running = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  return {
    logFile,
    async start(answers, timeoutMs) {
      if (running) throw new Error('temporal-server is already running');
      running = launch(binary, rootDir, logFile);
      await waitUntilServing(running, answers, timeoutMs, logFile);
    },
    kill: () => signalAndWait('SIGKILL', 0),
    stop: (graceMs = 20_000) => signalAndWait('SIGTERM', graceMs),
  };
}
