/**
 * The keeper worker for one Docker host: it polls `keeper-<host>` with every workflow and this host's
 * activities, ensures the host's schedules, and shuts down gracefully on SIGINT/SIGTERM.
 */
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from './activities';
import { openStateDb } from './db/open';
import { DockerClient } from './docker/client';
import { EventWatcher } from './events/watcher';
import { createLogger } from './log';
import { createKeeperMetrics, loopMetricsInterceptor } from './metrics';
import { ids, LOOPS, taskQueueFor } from './shared';
import { EMBEDDED_TEMPORAL_PORT, EMBEDDED_UI_PORT, type Settings } from './settings';
import { prebuiltBundle, WORKFLOWS_PATH } from './temporal/bundle';
import { startDevServer, type DevServer } from './temporal/dev-server';
import { installRuntime } from './temporal/runtime';
import { ensureSchedules, triggerReconcile } from './temporal/schedules';

export const SHUTDOWN_GRACE = '30s';

export interface KeeperWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  deps: ActivityDeps;
  /** A pre-built bundle (tests build it once); otherwise dist's bundle, or the sources. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  shutdownGraceTime?: WorkerOptions['shutdownGraceTime'];
}

export async function createKeeperWorker(opts: KeeperWorkerOptions): Promise<Worker> {
  const bundle = opts.workflowBundle ?? prebuiltBundle();
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: taskQueueFor(opts.deps.settings.hostId),
    activities: createActivities(opts.deps),
    interceptors: opts.deps.metrics ? { activity: [loopMetricsInterceptor(opts.deps.metrics, opts.deps.db)] } : undefined,
    ...(bundle ? { workflowBundle: bundle } : { workflowsPath: WORKFLOWS_PATH }),
    shutdownGraceTime: opts.shutdownGraceTime ?? SHUTDOWN_GRACE,
  });
}

export interface TemporalEndpoint {
  address: string;
  uiUrl: string | undefined;
  embedded: DevServer | undefined;
}

/** TEMPORAL_ADDRESS when set; otherwise the embedded dev server, persistent next to the state DB. */
export async function connectTemporal(settings: Settings): Promise<TemporalEndpoint> {
  if (settings.temporalAddress) return { address: settings.temporalAddress, uiUrl: undefined, embedded: undefined };
  const server = await startDevServer({
    dbFile: path.join(path.dirname(path.resolve(settings.db)), 'temporal.db'),
    namespace: settings.namespace,
    port: EMBEDDED_TEMPORAL_PORT,
    uiPort: EMBEDDED_UI_PORT,
  });
  return { address: server.address, uiUrl: server.uiUrl, embedded: server };
}

/** `keeper worker` (npm start): runs this host until SIGINT or SIGTERM, then shuts down gracefully. */
export async function runWorker(settings: Settings): Promise<void> {
  const log = createLogger(settings.logFormat, { host: settings.hostId });
  installRuntime(log, { metricsPort: settings.metricsPort, hostId: settings.hostId });
  const db = openStateDb(settings.db);
  const temporal = await connectTemporal(settings).catch((err) => {
    db.close();
    throw err;
  });
  const connection = await NativeConnection.connect({ address: temporal.address });
  const client = new Client({ connection: await Connection.connect({ address: temporal.address }), namespace: settings.namespace });
  let watcher: EventWatcher | undefined;
  try {
    // The runtime's globalTags already put keeper_host on every series: tagging it here too doubled the label.
    const metrics = createKeeperMetrics(Runtime.instance().metricMeter);
    const docker = new DockerClient();
    docker.onCall = (operation) => metrics.dockerCalls.add(1, { operation });
    const worker = await createKeeperWorker({ connection, namespace: settings.namespace, deps: { db, docker, settings, metrics } });
    await ensureSchedules(client, settings);
    watcher = new EventWatcher({
      db, docker, hostId: settings.hostId, log: log.child({ loop: 'events' }), debounceMs: settings.eventDebounce,
      requestTick: () => triggerReconcile(client, settings.hostId), metrics,
    });
    watcher.start();
    const stop = (signal: string) => {
      log.info('shutting down: running activities get a grace time', { signal, grace: SHUTDOWN_GRACE });
      worker.shutdown();
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.stdout.write(await banner(client, settings, temporal));
    log.info('keeper worker started', { taskQueue: taskQueueFor(settings.hostId), temporal: temporal.address, ui: temporal.uiUrl });
    await worker.run();
  } finally {
    await watcher?.stop();
    await client.connection.close();
    await connection.close();
    await temporal.embedded?.stop();
    db.close();
    log.info('keeper worker stopped');
  }
}

async function banner(client: Client, settings: Settings, temporal: TemporalEndpoint): Promise<string> {
  const lines = [
    'keeper is running',
    `  host        ${settings.hostId} (task queue ${taskQueueFor(settings.hostId)})`,
    `  state DB    ${path.resolve(settings.db)}`,
    `  temporal    ${temporal.address}, namespace ${settings.namespace}${temporal.embedded ? ' (embedded dev server)' : ''}`,
    `  UI          ${temporal.uiUrl ? `${temporal.uiUrl}/namespaces/${settings.namespace}/workflows?query=${encodeURIComponent(`KeeperHost="${settings.hostId}"`)}` : 'your Temporal UI'}`,
    '  schedules',
  ];
  for (const loop of LOOPS) {
    const d = await client.schedule.getHandle(ids.schedule(settings.hostId, loop)).describe();
    const next = d.info.nextActionTimes[0]?.toISOString() ?? '-';
    lines.push(`    ${loop.padEnd(10)} ${d.state.paused ? 'paused' : 'next run ' + next}`);
  }
  return lines.join('\n') + '\n';
}
