/**
 * Temporal for one CLI command. With TEMPORAL_ADDRESS set it goes through that server and this host's running
 * worker. Without it, it uses the embedded server of a running `npm start` on this machine when one answers
 * (so a reset reaches the circuit workflow that holds the timer); otherwise it brings up an in-memory dev
 * server and an in-process worker for the duration of the call, so `keeper reconcile --once` or
 * `keeper circuit reset` work on a machine with nothing running.
 */
import net from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { openStateDb } from '../db/open';
import { DockerClient } from '../docker/client';
import { KeeperHost, taskQueueFor } from '../shared';
import { EMBEDDED_TEMPORAL_PORT, type Settings } from '../settings';
import { startDevServer } from './dev-server';
import { installRuntime } from './runtime';

/** Runs `fn` with a client on this host's Temporal; a worker for the host polls while it runs. */
export async function withTemporal<T>(settings: Settings, fn: (client: Client) => Promise<T>): Promise<T> {
  const running = settings.temporalAddress ?? (await embeddedServerAnswering());
  if (running) {
    const connection = await Connection.connect({ address: running });
    try {
      return await fn(new Client({ connection, namespace: settings.namespace }));
    } finally {
      await connection.close();
    }
  }

  // The DB first: a bad path must fail before any server is started.
  const db = openStateDb(settings.db);
  installRuntime(undefined);
  const server = await startDevServer({ namespace: settings.namespace }).catch((err) => {
    db.close();
    throw err;
  });
  try {
    const native = await NativeConnection.connect({ address: server.address });
    const connection = await Connection.connect({ address: server.address });
    try {
      const { createKeeperWorker } = await import('../worker');
      const worker = await createKeeperWorker({
        connection: native,
        namespace: settings.namespace ?? 'default',
        deps: { db, docker: new DockerClient(), settings },
        shutdownGraceTime: '5s',
      });
      return await worker.runUntil(fn(new Client({ connection, namespace: settings.namespace })));
    } finally {
      await connection.close();
      await native.close();
    }
  } finally {
    db.close();
    await server.stop();
  }
}

/** The address of `npm start`'s embedded server when it answers on this machine. */
async function embeddedServerAnswering(): Promise<string | undefined> {
  const address = `127.0.0.1:${EMBEDDED_TEMPORAL_PORT}`;
  const probe = await new Promise<boolean>((resolve) => {
    const socket = net.connect(EMBEDDED_TEMPORAL_PORT, '127.0.0.1', () => (socket.end(), resolve(true)));
    socket.on('error', () => resolve(false));
  });
  return probe ? address : undefined;
}

export async function runWorkflowOnce<T>(settings: Settings, workflowType: string, workflowId: string, args: unknown[] = []): Promise<T> {
  return withTemporal(settings, (client) =>
    client.workflow.execute(workflowType, {
      taskQueue: taskQueueFor(settings.hostId),
      workflowId,
      args,
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: [{ key: KeeperHost, value: settings.hostId }],
    }) as Promise<T>,
  );
}
