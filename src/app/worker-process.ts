/**
 * Everything a `keeper worker` process opens, in the order that keeps a bad start harmless: the logger and the
 * engine; the tenant runtime (a missing one stops the worker before it writes or starts anything); the SDK's
 * runtime and metrics endpoint; the state DB (a bad one fails before any server starts); Temporal (the configured
 * cluster, or an embedded dev server persisted next to the state DB); keeper's metrics; and the host itself.
 */
import { Client, type Connection } from '@temporalio/client';
import { Runtime, type NativeConnection } from '@temporalio/worker';
import type { StateDb } from '../db/open';
import { workerTenantRuntime, type WorkerTenantRuntime } from '../host/tenant-runtime';
import type { Logger } from '../log';
import { createKeeperMetrics } from '../metrics';
import { EMBEDDED_TEMPORAL_PORT, EMBEDDED_UI_PORT, type Settings } from '../settings';
import { connectClient, resolveTemporalTarget, type TemporalTarget } from '../temporal/connection';
import { embeddedTemporalDbFile, resolveTemporalCli, startDevServer, type DevServer } from '../temporal/dev-server';
import { connectNative } from '../temporal/native';
import { installRuntime } from '../temporal/runtime';
import { createKeeperHost, type KeeperHost } from './keeper-host';
import { hostEngine, hostLogger, openHostDb } from './open';

export interface TemporalSession {
  target: TemporalTarget & { address: string };
  native: NativeConnection;
  connection: Connection;
  uiUrl: string | undefined;
  embedded: DevServer | undefined;
  close(): Promise<void>;
}

export interface WorkerProcess {
  /** The settings in force: the configured ones, with the tenant runtime actually used. */
  settings: Settings;
  log: Logger;
  tenants: WorkerTenantRuntime;
  temporal: TemporalSession;
  client: Client;
  host: KeeperHost;
  close(): Promise<void>;
}

/** Opens a worker process's parts (see the header); on a failure, closes what was opened before it. */
export async function openWorkerProcess(configured: Settings): Promise<WorkerProcess> {
  const log = hostLogger(configured, { inWorker: true });
  const docker = hostEngine(configured);
  const embeddedTemporal = !resolveTemporalTarget(configured).address;
  const tenants = await workerTenantRuntime({ docker, settings: configured, log, embeddedTemporal });
  const settings: Settings = { ...configured, tenantRuntime: tenants.runtime };
  installRuntime(log, { metricsPort: settings.metricsPort, hostId: settings.hostId });
  const db: StateDb = openHostDb(settings, 'worker');
  const temporal = await openTemporal(settings).catch((err) => (db.close(), Promise.reject(err)));
  const metrics = settings.metricsPort ? createKeeperMetrics(Runtime.instance().metricMeter) : undefined;
  const host = createKeeperHost(settings, { db, log, metrics, docker });
  const client = new Client({ connection: temporal.connection, namespace: temporal.target.namespace });
  const close = async () => {
    await temporal.close();
    db.close();
  };
  return { settings, log, tenants, temporal, client, host, close };
}

/** The configured Temporal, or the embedded dev server when no address is configured anywhere. */
async function openTemporal(settings: Settings): Promise<TemporalSession> {
  const configured = resolveTemporalTarget(settings);
  const embedded = configured.address
    ? undefined
    : await startDevServer({
        binary: resolveTemporalCli(settings.temporalCli),
        dbFile: embeddedTemporalDbFile(settings.db),
        namespace: configured.namespace,
        port: EMBEDDED_TEMPORAL_PORT,
        uiPort: EMBEDDED_UI_PORT,
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
