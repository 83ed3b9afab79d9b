/**
 * Runs one workflow to completion for a CLI command. With TEMPORAL_ADDRESS set it goes through that server
 * and this host's running worker; otherwise it brings up an in-memory dev server and an in-process worker
 * for the duration of the call, so `keeper reconcile --once` works on a machine with nothing running.
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { openStateDb } from '../db/open';
import { DockerClient } from '../docker/client';
import { KeeperHost, taskQueueFor } from '../shared';
import type { Settings } from '../settings';
import { startDevServer } from './dev-server';
import { installRuntime } from './runtime';

export async function runWorkflowOnce<T>(settings: Settings, workflowType: string, workflowId: string, args: unknown[] = []): Promise<T> {
  const start = (client: Client) =>
    client.workflow.execute(workflowType, {
      taskQueue: taskQueueFor(settings.hostId),
      workflowId,
      args,
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: [{ key: KeeperHost, value: settings.hostId }],
    }) as Promise<T>;

  if (settings.temporalAddress) {
    const connection = await Connection.connect({ address: settings.temporalAddress });
    try {
      return await start(new Client({ connection, namespace: settings.namespace }));
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
        namespace: settings.namespace,
        deps: { db, docker: new DockerClient(), settings },
      });
      return await worker.runUntil(start(new Client({ connection, namespace: settings.namespace })));
    } finally {
      await connection.close();
      await native.close();
    }
  } finally {
    db.close();
    await server.stop();
  }
}
