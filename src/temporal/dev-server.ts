/**
 * The embedded Temporal: the CLI dev server (`temporal server start-dev`) run as a child process when no
 * TEMPORAL_ADDRESS is given. It persists to a SQLite file, serves the UI, registers keeper's search
 * attributes, and is stopped again when keeper stops.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { cliTypeName, KEEPER_SEARCH_ATTRIBUTES } from '../search-attributes';
import { EMBEDDED_TEMPORAL_PORT } from '../settings';

export interface DevServerOptions {
  binary?: string;
  dbFile?: string; // in memory when unset
  ip?: string;
  port?: number; // a free port when unset
  uiPort?: number; // headless when unset
  namespace?: string;
  /** Name → the CLI's type name; keeper's own when unset. */
  searchAttributes?: Record<string, string>;
  extraArgs?: string[];
  startTimeoutMs?: number;
}

export interface DevServer {
  address: string;
  uiUrl: string | undefined;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** The CLI found on PATH: the spawn looks it up there, as a shell would. */
const ON_PATH = 'temporal';

/**
 * The Temporal CLI that runs the embedded dev server: --temporal-cli (KEEPER_TEMPORAL_CLI), else a checkout's
 * provisioned one (scripts/provision-temporal-cli.sh), else `temporal` on PATH (an installed keeper has no
 * checkout). When there is none, startDevServer says what to do in one line.
 */
export function resolveTemporalCli(given?: string): string {
  if (given) return given;
  const provisioned = path.resolve(__dirname, '..', '..', '.tools', 'bin', 'temporal');
  return fs.existsSync(provisioned) ? provisioned : ON_PATH;
}

export class NoTemporalCliError extends Error {
  override name = 'NoTemporalCliError';
  constructor() {
    super(
      'no Temporal CLI for the embedded dev server: put `temporal` on PATH (https://docs.temporal.io/cli), ' +
        'set KEEPER_TEMPORAL_CLI (--temporal-cli) to its path, or set TEMPORAL_ADDRESS (--temporal-address) to your Temporal server',
    );
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export class DevServerExitedError extends Error {
  override name = 'DevServerExitedError';
}

/**
 * Starts a dev server. The server also binds internal ports it picks at random, which can collide with another
 * process's on a busy machine; an early exit is therefore retried (twice) before it counts as a failure.
 */
export async function startDevServer(opts: DevServerOptions = {}): Promise<DevServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startDevServerOnce(opts);
    } catch (err) {
      if (!(err instanceof DevServerExitedError) || attempt === 3) throw err;
    }
  }
}

/** The CLI's arguments for `opts`; the DB file's directory is made (private) when there is one. */
function devServerArgs(opts: DevServerOptions, ip: string, port: number): string[] {
  const args = [
    'server',
    'start-dev',
    '--ip',
    ip,
    '--port',
    String(port),
    '--namespace',
    opts.namespace ?? 'default',
    '--log-level',
    'warn',
    '--log-format',
    'json',
  ];
  if (opts.dbFile) {
    fs.mkdirSync(path.dirname(opts.dbFile), { recursive: true, mode: 0o700 });
    args.push('--db-filename', opts.dbFile);
  }
  args.push(...(opts.uiPort ? ['--ui-port', String(opts.uiPort)] : ['--headless']));
  const attributes = opts.searchAttributes ?? Object.fromEntries(KEEPER_SEARCH_ATTRIBUTES.map((k) => [k.name, cliTypeName(k)]));
  for (const [name, type] of Object.entries(attributes)) args.push('--search-attribute', `${name}=${type}`);
  return [...args, ...(opts.extraArgs ?? [])];
}

/** What `exited` says when the binary is not there to spawn. */
const NOT_FOUND = 'not found';

interface Spawned {
  child: ChildProcess;
  /** The exit code, or why it could not be spawned (a binary that cannot be spawned never exits). */
  exited: Promise<number | string | null>;
  stderrTail(): string;
}

function spawnPrivately(binary: string, args: string[]): Spawned {
  // The CLI creates temporal.db (and its journal files) with the umask it inherits: make them private to us.
  const umask = process.umask(0o077);
  let child: ChildProcess;
  try {
    child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } finally {
    process.umask(umask);
  }
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<number | string | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ENOENT' ? NOT_FOUND : err.message));
  });
  return { child, exited, stderrTail: () => stderr };
}

async function startDevServerOnce(opts: DevServerOptions): Promise<DevServer> {
  const binary = opts.binary ?? resolveTemporalCli();
  const ip = opts.ip ?? '127.0.0.1';
  const port = opts.port ?? (await freePort());
  const { child, exited, stderrTail } = spawnPrivately(binary, devServerArgs(opts, ip, port));
  const address = `${ip}:${port}`;
  const timeoutMs = opts.startTimeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const code = await Promise.race([exited, new Promise<'pending'>((r) => setTimeout(() => r('pending'), 200))]);
    if (code === NOT_FOUND && binary === ON_PATH) throw new NoTemporalCliError();
    if (code !== 'pending') {
      const lines = stderrTail().trim().split('\n');
      const reason = lines.find((l) => /panic|error|Error|address already in use/.test(l)) ?? lines.pop() ?? '';
      throw new DevServerExitedError(`temporal dev server (${binary}) exited (${code}): ${reason.trim()}`);
    }
    if (await answers(address)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`temporal dev server at ${address} did not answer within ${timeoutMs} ms`);
    }
  }
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  return { address, uiUrl: opts.uiPort ? `http://${ip}:${opts.uiPort}` : undefined, process: child, stop };
}

/** The embedded server's persistence: temporal.db, next to the state DB. */
export function embeddedTemporalDbFile(stateDbPath: string): string {
  return path.join(path.dirname(path.resolve(stateDbPath)), 'temporal.db');
}

/** Whether a Temporal server answers at `address`: a frontend's GetSystemInfo, not merely an open port. */
export async function answers(address: string): Promise<boolean> {
  try {
    const conn = await Connection.connect({ address, connectTimeout: 1000 });
    try {
      await conn.workflowService.getSystemInfo({});
      return true;
    } finally {
      await conn.close();
    }
  } catch {
    return false;
  }
}

/** The address of this machine's embedded server (`npm start`'s, on its fixed port) when it answers. */
export async function embeddedServerAnswering(): Promise<string | undefined> {
  const address = `127.0.0.1:${EMBEDDED_TEMPORAL_PORT}`;
  return (await answers(address)) ? address : undefined;
}
