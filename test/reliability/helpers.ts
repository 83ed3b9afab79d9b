/** Processes for the fault tests: a keeper worker in a child process (worker-child.ts) that a test can kill. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { TEST_TENANT_RUNTIME } from '../helpers/fixtures';

const ROOT = path.resolve(__dirname, '..', '..');

export interface ChildWorker {
  child: ChildProcess;
  /** Resolves with the exit code, or the signal that ended the process. */
  exited: Promise<number | NodeJS.Signals | null>;
  output(): string;
  ready(timeoutMs?: number): Promise<void>;
  kill(): Promise<void>;
}

/** Starts worker-child.ts with these KEEPER_* variables (plus TEMPORAL_ADDRESS and KEEPER_TEST_BUNDLE). */
export function startChildWorker(env: NodeJS.ProcessEnv): ChildWorker {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'worker-child.ts')], {
    cwd: ROOT,
    // The suite's main engine has no gVisor: the tests' tenant runtime (see TEST_TENANT_RUNTIME), unless `env` says.
    env: { ...process.env, KEEPER_LOG_FORMAT: 'json', KEEPER_METRICS_PORT: '0', KEEPER_TENANT_RUNTIME: TEST_TENANT_RUNTIME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out = (out + d).slice(-200_000)));
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)));
  return {
    child,
    exited,
    output: () => out,
    async ready(timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (!out.includes('worker ready')) {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`worker exited before ready: ${out}`);
        if (Date.now() > deadline) throw new Error(`worker not ready within ${timeoutMs} ms: ${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
}
