/**
 * The keeper worker for one Docker host: it polls `keeper-<host>` with every workflow and this host's
 * activities, ensures the host's schedules, and shuts down gracefully on SIGINT/SIGTERM.
 */
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from './activities';
import { openStateDb } from './db/open';
import { DockerClient } from './docker/client';
import { createLogger } from './log';
import { installRuntime } from './temporal/runtime';
import { taskQueueFor } from './shared';
import type { Settings } from './settings';
import { prebuiltBundle, WORKFLOWS_PATH } from './temporal/bundle';
import { startDevServer, type DevServer } from './temporal/dev-server';
import { ensureSchedules } from './temporal/schedules';


export interface KeeperWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  deps: ActivityDeps;
  /** A pre-built bundle (tests build it once); otherwise the workflows are bundled from source. */
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
    ...(bundle ? { workflowBundle: bundle } : { workflowsPath: WORKFLOWS_PATH }),
    shutdownGraceTime: opts.shutdownGraceTime ?? '30s',
  });
}

export interface TemporalEndpoint {
  address: string;
  uiUrl: string | undefined;
  embedded: DevServer | undefined;
}

/** TEMPORAL_ADDRESS when set; otherwise the embedded dev server, persistent next to the state DB. */
export async function connectTemporal(settings: Settings, embedded: { uiPort?: number; port?: number } = {}): Promise<TemporalEndpoint> {
  if (settings.temporalAddress) return { address: settings.temporalAddress, uiUrl: undefined, embedded: undefined };
  const server = await startDevServer({
    dbFile: path.join(path.dirname(path.resolve(settings.db)), 'temporal.db'),
    namespace: settings.namespace,
    port: embedded.port,
    uiPort: embedded.uiPort,
  });
  return { address: server.address, uiUrl: server.uiUrl, embedded: server };
}

/** `keeper worker`: runs this host until a signal stops it. */
export async function runWorker(settings: Settings): Promise<void> {
  const log = createLogger(settings.logFormat, { host: settings.hostId });
  installRuntime(log, { metricsPort: settings.metricsPort, hostId: settings.hostId });
  const db = openStateDb(settings.db);
  const docker = new DockerClient();
  const temporal = await connectTemporal(settings, { port: 7233, uiPort: 8233 });
  const connection = await NativeConnection.connect({ address: temporal.address });
  try {
    const worker = await createKeeperWorker({ connection, namespace: settings.namespace, deps: { db, docker, settings } });
    const client = await connectClient(temporal.address, settings.namespace);
    await ensureSchedules(client, settings);
    await client.connection.close();
    log.info('keeper worker started', {
      taskQueue: taskQueueFor(settings.hostId),
      db: path.resolve(settings.db),
      temporal: temporal.address,
      namespace: settings.namespace,
      ui: temporal.uiUrl,
    });
    await worker.run();
  } finally {
    await connection.close();
    await temporal.embedded?.stop();
    db.close();
    log.info('keeper worker stopped');
  }
}

/** A client on the same endpoint, for commands that start or signal workflows. */
export async function connectClient(address: string, namespace: string): Promise<Client> {
  const connection = await Connection.connect({ address });
  return new Client({ connection, namespace });
}
