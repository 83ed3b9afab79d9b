/**
 * Temporal for one CLI command. With TEMPORAL_ADDRESS set it goes through that server and this host's running
 * worker; otherwise it brings up an in-memory dev server and an in-process worker for the duration of the call,
 * so `keeper reconcile --once` or `keeper circuit reset` work on a machine with nothing running.
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { openStateDb } from '../db/open';
import { DockerClient } from '../docker/client';
import { KeeperHost, taskQueueFor } from '../shared';
import type { Settings } from '../settings';
import { startDevServer } from './dev-server';

/** Runs `fn` with a client on this host's Temporal; a worker for the host polls while it runs. */
export async function withTemporal<T>(settings: Settings, fn: (client: Client) => Promise<T>): Promise<T> {
  if (settings.temporalAddress) {
    const connection = await Connection.connect({ address: settings.temporalAddress });
    try {
      return await fn(new Client({ connection, namespace: settings.namespace }));
    } finally {
      await connection.close();
    }
  }

  const server = await startDevServer({ namespace: settings.namespace });
  const db = openStateDb(settings.db);
  try {
    const native = await NativeConnection.connect({ address: server.address });
    const connection = await Connection.connect({ address: server.address });
    try {
      const { createKeeperWorker } = await import('../worker');
      const worker = await createKeeperWorker({
        connection: native,
        namespace: settings.namespace,
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
