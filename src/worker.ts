/**
 * `keeper worker` (npm start): this host's worker. It polls `keeper-<host>` with every workflow and this host's
 * activities, ensures the host's schedules, follows Docker's events, and shuts down gracefully on SIGINT or
 * SIGTERM. It connects as Temporal's own tools do (src/temporal/connection.ts); with no address configured
 * anywhere it runs an embedded dev server, persistent next to the state DB.
 */
import path from 'node:path';
import { Client, type Connection } from '@temporalio/client';
import { Runtime, type NativeConnection } from '@temporalio/worker';
import { openStateDb } from './db/open';
import { DockerClient } from './docker/client';
import type { EventWatcher } from './events/watcher';
import { ids, LOOPS, taskQueueFor } from './ids';
import { createKeeperHost, SHUTDOWN_GRACE, workerLogger } from './keeper-host';
import type { Logger } from './log';
import { planNotification } from './host/notifications';
import { webhooksWords } from './policy/notification';
import { createKeeperMetrics } from './metrics';
import { workerTenantRuntime, type WorkerTenantRuntime } from './host/tenant-runtime';
import { EMBEDDED_TEMPORAL_PORT, EMBEDDED_UI_PORT, type Settings } from './settings';
import { connectClient, describeTarget, resolveTemporalTarget, type TemporalTarget } from './temporal/connection';
import { startDevServer, type DevServer } from './temporal/dev-server';
import { connectNative } from './temporal/native';
import { installRuntime } from './temporal/runtime';

interface TemporalSession {
  target: TemporalTarget & { address: string };
  native: NativeConnection;
  connection: Connection;
  uiUrl: string | undefined;
  embedded: DevServer | undefined;
  close(): Promise<void>;
}

/** The configured Temporal, or the embedded dev server when no address is configured anywhere. */
async function openTemporal(settings: Settings): Promise<TemporalSession> {
  const configured = resolveTemporalTarget(settings);
  const embedded = configured.address ? undefined : await startDevServer({
    dbFile: path.join(path.dirname(path.resolve(settings.db)), 'temporal.db'),
    namespace: configured.namespace, port: EMBEDDED_TEMPORAL_PORT, uiPort: EMBEDDED_UI_PORT,
  });
  const target = { ...configured, address: configured.address ?? embedded!.address };
  try {
    const connection = await connectClient(target);
    const native = await connectNative(target).catch(async (err) => (await connection.close(), Promise.reject(err)));
    const close = async () => {
      await connection.close();
      await native.close();
      await embedded?.stop();
    };
    return { target, native, connection, uiUrl: embedded?.uiUrl, embedded, close };
  } catch (err) {
    await embedded?.stop();
    throw err;
  }
}

/** Runs this host until SIGINT or SIGTERM, then shuts down gracefully. */
export async function runWorker(configured: Settings): Promise<void> {
  const log = workerLogger(configured);
  const docker = new DockerClient();
  // An engine without the tenant runtime stops keeper before it writes or starts anything (ah's
  // VerifyGVisorRuntime): one line, exit code 2. Only a development host falls back to runc, and says so.
  const embeddedTemporal = !resolveTemporalTarget(configured).address;
  const tenants = await workerTenantRuntime({ docker, settings: configured, log, embeddedTemporal });
  const settings: Settings = { ...configured, tenantRuntime: tenants.runtime };
  installRuntime(log, { metricsPort: settings.metricsPort, hostId: settings.hostId });
  const db = openStateDb(settings.db); // a bad DB fails before any server is started
  const temporal = await openTemporal(settings).catch((err) => (db.close(), Promise.reject(err)));
  const metrics = settings.metricsPort ? createKeeperMetrics(Runtime.instance().metricMeter) : undefined;
  const host = createKeeperHost(settings, { db, log, metrics, docker });
  const client = new Client({ connection: temporal.connection, namespace: temporal.target.namespace });
  let watcher: EventWatcher | undefined;
  try {
    const worker = await host.createWorker({ connection: temporal.native, namespace: temporal.target.namespace });
    await host.ensureSchedules(client);
    watcher = host.eventWatcher(client);
    watcher.start();
    stopOnSignals(log, () => worker.shutdown());
    process.stdout.write(await banner(client, settings, temporal, tenants));
    log.info('keeper worker started', { taskQueue: taskQueueFor(settings.hostId), temporal: describeTarget(temporal.target), ui: temporal.uiUrl });
    await worker.run();
  } finally {
    await watcher?.stop();
    await temporal.close();
    db.close();
    log.info('keeper worker stopped');
  }
}

function stopOnSignals(log: Logger, stop: () => void): void {
  const onSignal = (signal: string) => {
    log.info('shutting down: running activities get a grace time', { signal, grace: SHUTDOWN_GRACE });
    stop();
  };
  process.once('SIGINT', () => onSignal('SIGINT'));
  process.once('SIGTERM', () => onSignal('SIGTERM'));
}

async function banner(client: Client, settings: Settings, temporal: TemporalSession, tenants: WorkerTenantRuntime): Promise<string> {
  const query = encodeURIComponent(`KeeperHost="${settings.hostId}"`);
  const lines = [
    'keeper is running',
    `  host        ${settings.hostId} (task queue ${taskQueueFor(settings.hostId)})`,
    `  state DB    ${path.resolve(settings.db)}`,
    `  tenants     runtime ${tenants.runtime}: ${tenants.isolation}`,
    ...(tenants.fallbackReason ? [`              why: ${tenants.fallbackReason}`] : []),
    `  temporal    ${describeTarget(temporal.target)}${temporal.embedded ? ' (embedded dev server)' : ''}`,
    `  alerts      ${webhooksWords(planNotification({ settings }).targets.map((t) => t.shown), settings.notifySecret !== undefined)}`,
    `  UI          ${temporal.uiUrl ? `${temporal.uiUrl}/namespaces/${temporal.target.namespace}/workflows?query=${query}` : 'your Temporal UI'}`,
    '  schedules',
  ];
  for (const loop of LOOPS) {
    const d = await client.schedule.getHandle(ids.schedule(settings.hostId, loop)).describe();
    lines.push(`    ${loop.padEnd(10)} ${d.state.paused ? 'paused' : 'next run ' + (d.info.nextActionTimes[0]?.toISOString() ?? '-')}`);
  }
  return lines.join('\n') + '\n';
}
