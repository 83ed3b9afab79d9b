/**
 * One process of bench:fleet's simulated hosts (forked by bench/fleet.ts). Each host is built as `keeper worker`
 * builds one, through src/app/keeper-host.ts: its own SQLite state DB, task queue, worker (every workflow, its own
 * activities), schedules and event watcher. The hosts of one process share one native connection and one client
 * connection to the cluster, as nothing in a host's cost depends on holding its own. They share one Docker engine
 * (the bench's, DOCKER_HOST), on which they have no services and keep no pool: idle hosts.
 *
 * Protocol over IPC: the parent sends { start: FleetWorkerConfig }; the child answers { ready: n } once every
 * host's worker runs, then { scheduled: n } once every host's schedules exist (after the parent's { schedule: true });
 * on { stop: true }, on SIGTERM, or when the parent goes away, it stops its hosts and exits.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { createKeeperHost, type KeeperHost } from '../src/app/keeper-host';
import { openStateDb, type StateDb } from '../src/db/open';
import type { EventWatcher } from '../src/watch/event-watcher';
import { silentLogger } from '../src/log';
import { loadSettings, type RawSettings } from '../src/settings';
import { connectClient, resolveTemporalTarget } from '../src/temporal/connection';
import { connectNative } from '../src/temporal/native';
import { installRuntime } from '../src/temporal/runtime';

export interface FleetWorkerConfig {
  hostIds: string[];
  /** Each host's state DB goes to DIR/<hostId>.db. */
  dir: string;
  /** Settings every host gets (the loop intervals, pool size 0, …). */
  raw: RawSettings;
  temporalEnv: Record<string, string>;
  workflowBundle: { codePath: string };
  /** Every host's workflows in this process's main thread: no worker thread (and V8 isolate) per host. */
  workflowsInMainThread: boolean;
}

interface RunningHost {
  host: KeeperHost;
  db: StateDb;
  worker: Worker;
  running: Promise<void>;
  watcher: EventWatcher;
}

const START_CONCURRENCY = 4;
const hosts: RunningHost[] = [];
const closers: (() => Promise<unknown>)[] = [];
let stopping: Promise<void> | undefined;

async function startHost(
  id: string,
  c: FleetWorkerConfig,
  conn: { native: Awaited<ReturnType<typeof connectNative>>; client: Client; namespace: string },
): Promise<void> {
  const settings = loadSettings({ ...c.raw, db: path.join(c.dir, `${id}.db`), hostId: id, metricsPort: '0' }, {});
  const db = openStateDb(settings.db);
  const host = createKeeperHost(settings, { db, log: silentLogger });
  const worker = await host.createWorker({
    connection: conn.native,
    namespace: conn.namespace,
    workflowBundle: c.workflowBundle,
    shutdownGraceTime: '2s',
    workflowsInMainThread: c.workflowsInMainThread,
  });
  const running = worker.run();
  const watcher = host.eventWatcher(conn.client);
  watcher.start();
  hosts.push({ host, db, worker, running, watcher });
}

async function start(c: FleetWorkerConfig): Promise<Client> {
  installRuntime(undefined);
  const target = resolveTemporalTarget(loadSettings({ db: path.join(c.dir, 'x.db'), hostId: 'fleet' }, {}), c.temporalEnv);
  const resolved = { ...target, address: target.address! };
  const native = await connectNative(resolved);
  closers.push(() => native.close());
  const connection = await connectClient(resolved);
  closers.push(() => connection.close());
  const client = new Client({ connection, namespace: target.namespace });
  fs.mkdirSync(c.dir, { recursive: true });
  // A few at a time: each worker's creation waits on the server (namespace check) as well as on this CPU.
  const queue = [...c.hostIds];
  const starter = async () => {
    for (let id = queue.shift(); id; id = queue.shift()) await startHost(id, c, { native, client, namespace: target.namespace });
  };
  await Promise.all(Array.from({ length: START_CONCURRENCY }, starter));
  return client;
}

async function stopAll(): Promise<void> {
  await Promise.all(
    hosts.map(async (h) => {
      await h.watcher.stop().catch(() => undefined);
      if (h.worker.getState() === 'RUNNING') h.worker.shutdown();
      await h.running.catch(() => undefined);
      h.db.close();
    }),
  );
  for (const close of closers.reverse()) await close().catch(() => undefined);
}

function stop(code: number): void {
  stopping ??= stopAll().finally(() => process.exit(code));
}

let client: Client | undefined;
process.on('message', (m: { start?: FleetWorkerConfig; schedule?: boolean; stop?: boolean }) => {
  const fail = (err: Error) => {
    const cause = (err as Error & { cause?: Error }).cause;
    process.stderr.write(`fleet worker: ${err.message.split('\n')[0]}${cause ? `: ${cause.message.split('\n')[0]}` : ''}\n`);
    stop(1);
  };
  if (m.start) {
    const config = m.start;
    start(config).then((c) => ((client = c), process.send?.({ ready: hosts.length })), fail);
  } else if (m.schedule) {
    // One host after another, as each worker would at its start; schedules are what the measured window runs.
    (async () => {
      for (const h of hosts) await h.host.ensureSchedules(client!);
      process.send?.({ scheduled: hosts.length });
    })().catch(fail);
  } else if (m.stop) stop(0);
});
process.on('disconnect', () => stop(0));
process.on('SIGTERM', () => stop(0));
process.on('SIGINT', () => stop(0));
