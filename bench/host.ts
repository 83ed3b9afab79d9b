/**
 * A keeper host for benchmarks: a fresh SQLite file, an in-memory dev server, a real keeper worker with its
 * reconcile schedule, and optionally the event watcher, exactly as `npm start` wires them.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { openStateDb, type StateDb } from '../src/db/open';
import { DockerClient } from '../src/docker/client';
import type { EventWatcher } from '../src/watch/event-watcher';
import { createKeeperHost } from '../src/app/keeper-host';
import { silentLogger } from '../src/log';
import { loadSettings, type RawSettings, type Settings } from '../src/settings';
import { connectClient, resolveTemporalTarget } from '../src/temporal/connection';
import { startDevServer } from '../src/temporal/dev-server';
import { connectNative } from '../src/temporal/native';
import { installRuntime } from '../src/temporal/runtime';
import { ensureLoopSchedules } from '../src/loops/schedules';

export interface BenchHost {
  db: StateDb;
  docker: DockerClient;
  client: Client;
  settings: Settings;
  worker: Worker;
  startWatcher(): EventWatcher;
  stopWatcher(): Promise<void>;
  stop(): Promise<void>;
}

/** Benchmarks create and crash containers: they run only on an engine named explicitly (an isolated one). */
export function requireExplicitEngine(usage: string): void {
  if (process.env.DOCKER_HOST) return;
  process.stderr.write(
    `DOCKER_HOST is not set. Use an isolated engine (bash scripts/extra-dockerd.sh start bench; stop it with: bash scripts/extra-dockerd.sh stop bench):\n  ${usage}\n`,
  );
  process.exit(2);
}

/**
 * A bench host. Its Temporal is an in-memory dev server of its own, unless `temporalEnv` gives the TEMPORAL_*
 * variables of another server (a real cluster), reached through keeper's own connection factory.
 */
export async function startBenchHost(raw: RawSettings = {}, db?: StateDb, temporalEnv?: Record<string, string>): Promise<BenchHost> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keeper-bench-'));
  const settings = loadSettings(
    {
      db: path.join(dir, 'state.db'),
      hostId: `bench-${crypto.randomBytes(3).toString('hex')}`,
      metricsPort: '0',
      ...raw,
    },
    {},
  );
  installRuntime(undefined);
  const stateDb = db ?? openStateDb(settings.db);
  const server = temporalEnv ? undefined : await startDevServer();
  const target = resolveTemporalTarget(settings, temporalEnv ?? { TEMPORAL_ADDRESS: server!.address });
  const resolved = { ...target, address: target.address! };
  const connection = await connectNative(resolved);
  const client = new Client({ connection: await connectClient(resolved), namespace: target.namespace });
  const docker = new DockerClient(); // its own, so the bench can read the calls it counts
  const host = createKeeperHost(settings, { db: stateDb, docker, log: silentLogger });
  const worker = await host.createWorker({
    connection,
    namespace: target.namespace,
    shutdownGraceTime: '2s',
    workflowBundle: bundleOutOfProcess(dir),
  });
  await ensureLoopSchedules(client, settings, ['reconcile']);
  const running = worker.run();
  let watcher: EventWatcher | undefined;
  return {
    db: stateDb,
    docker,
    client,
    settings,
    worker,
    startWatcher() {
      watcher = host.eventWatcher(client);
      watcher.start();
      return watcher;
    },
    async stopWatcher() {
      await watcher?.stop();
      watcher = undefined;
    },
    async stop() {
      await watcher?.stop();
      worker.shutdown();
      await running;
      await client.connection.close();
      await connection.close();
      await server?.stop();
      stateDb.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The workflow bundle, made by a child process the way `npm run build` makes it for `npm start`: webpacking in
 * this process would leave its memory in the worker's RSS, which bench:scale reports.
 */
export function bundleOutOfProcess(dir: string): { codePath: string } {
  const codePath = path.join(dir, 'workflow-bundle.js');
  const root = path.resolve(__dirname, '..');
  execFileSync(
    process.execPath,
    [
      path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'),
      '-e',
      `require(${JSON.stringify(path.join(root, 'src', 'temporal', 'bundle.ts'))}).writeBundle(${JSON.stringify(codePath)})`,
    ],
    { stdio: 'inherit' },
  );
  return { codePath };
}

export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

export function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}
