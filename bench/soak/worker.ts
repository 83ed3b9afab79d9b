/**
 * The soak's `keeper worker`: the built bin in a child process (as test/helpers/cli.ts starts one), its output
 * appended to a log file in the run's directory (an hour of JSON lines does not belong in memory). It can be
 * SIGKILLed and started again on the same state DB and host id, as a crashed worker is.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** The built bin, as test/helpers/cli.ts runs it (that module loads vitest, which a bench must not). */
export const KEEPER_BIN = path.join(__dirname, '..', '..', 'bin', 'keeper.js');

export class SoakWorker {
  private child: ChildProcess | undefined;
  private exited: Promise<void> | undefined;
  /** The end of the output since the last start: enough to find the banner and to quote a failure. */
  private tail = '';
  starts = 0;

  constructor(
    private readonly args: string[],
    private readonly env: NodeJS.ProcessEnv,
    readonly logFile: string,
  ) {}

  get pid(): number | undefined {
    return this.child && this.child.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined;
  }

  /** Starts the worker and waits (bounded) for its banner. */
  async start(timeoutMs = 180_000): Promise<void> {
    const log = fs.createWriteStream(this.logFile, { flags: 'a' });
    log.write(`--- soak: worker start ${++this.starts} at ${new Date().toISOString()}\n`);
    const child = spawn(process.execPath, [KEEPER_BIN, 'worker', ...this.args], {
      env: { ...process.env, ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.tail = '';
    const keep = (d: Buffer) => {
      log.write(d);
      this.tail = (this.tail + d.toString()).slice(-20_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    this.exited = new Promise((resolve) => child.on('exit', () => (log.end(), resolve())));
    const deadline = Date.now() + timeoutMs;
    while (!this.tail.includes('keeper is running')) {
      if (child.exitCode !== null) throw new Error(`keeper worker exited (${child.exitCode}) at start: ${this.tail.slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`keeper worker did not start within ${timeoutMs} ms: ${this.tail.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** SIGKILL, as a crash or the OOM killer would; resolves once it is gone. */
  async kill(): Promise<void> {
    if (!this.pid) return;
    this.child!.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM and a bounded wait for a clean stop, then SIGKILL. */
  async stop(): Promise<void> {
    if (!this.pid) return;
    this.child!.kill('SIGTERM');
    const stopped = await Promise.race([this.exited!.then(() => true), new Promise((r) => setTimeout(() => r(false), 30_000))]);
    if (!stopped) await this.kill();
  }
}
