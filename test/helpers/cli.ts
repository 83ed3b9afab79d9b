/** Runs `keeper` as an operator would: the built bin in a child process, or `main` in this one. */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import path from 'node:path';
import { vi } from 'vitest';
import { main } from '../../src/cli';
import { TEST_TENANT_RUNTIME } from './fixtures';

export const KEEPER_BIN = path.join(__dirname, '..', '..', 'bin', 'keeper.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * What every keeper child process gets unless the test says otherwise: no Temporal address (each command finds
 * its own), and the tests' tenant runtime, since the suite's main engine has no gVisor (see TEST_TENANT_RUNTIME).
 */
const CHILD_ENV = { TEMPORAL_ADDRESS: '', KEEPER_TENANT_RUNTIME: TEST_TENANT_RUNTIME };

/** Runs the built bin, capturing its output and exit code. */
export function keeper(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 120_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [KEEPER_BIN, ...args], {
      env: { ...process.env, ...CHILD_ENV, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`keeper ${args.join(' ')} did not finish within ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Starts `keeper <args>` in the background; `waitForOutput` waits (bounded) for a line on stdout or stderr. */
export function startKeeper(args: string[], env: NodeJS.ProcessEnv = {}) {
  return watchOutput(
    spawn(process.execPath, [KEEPER_BIN, ...args], {
      env: { ...process.env, ...CHILD_ENV, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
}

/** A child's stdout and stderr as one text, its exit code, and a bounded wait for a pattern in that text. */
export function watchOutput(child: ChildProcessByStdio<null, Readable, Readable>, name = 'keeper') {
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    get output() {
      return output;
    },
    async waitForOutput(pattern: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const m = output.match(pattern);
        if (m) return m;
        if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}) before printing ${pattern}: ${output}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`${name} did not print ${pattern} within ${timeoutMs} ms: ${output}`);
    },
  };
}

/**
 * Runs `keeper <args>` through `main` in this process, capturing what it writes to stdout and stderr. Unlike the
 * bin, it needs no build, and a test can run a worker for the command in the same process.
 */
export async function keeperInProcess(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const o = vi.spyOn(process.stdout, 'write').mockImplementation((s) => ((out += String(s)), true));
  const e = vi.spyOn(process.stderr, 'write').mockImplementation((s) => ((err += String(s)), true));
  try {
    const code = await main(['node', 'keeper', ...args]);
    return { code, out, err };
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
}
