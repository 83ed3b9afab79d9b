/**
 * keeper on the test cluster: the TEMPORAL_* variables an operator sets for mTLS, and a keeper host whose worker
 * connects through keeper's own connection factory (src/temporal/connection.ts) with them. No vitest imports.
 */
import type { Client } from '@temporalio/client';
import { Client as TemporalClient } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import type { StateDb } from '../../../src/db/open';
import type { DockerClient } from '../../../src/docker/client';
import { createKeeperHost, type KeeperHost } from '../../../src/app/keeper-host';
import type { Logger } from '../../../src/log';
import type { Settings } from '../../../src/settings';
import { connectClient, resolveTemporalTarget } from '../../../src/temporal/connection';
import { connectNative } from '../../../src/temporal/native';
import type { ClientTlsFiles } from './certs';
import type { TemporalCluster } from './index';

/** The variables that make keeper (and Temporal's own tools) connect to the cluster with `files`. */
export function temporalTlsEnv(cluster: TemporalCluster, files: ClientTlsFiles = cluster.tls): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: cluster.address,
    TEMPORAL_NAMESPACE: cluster.namespace,
    TEMPORAL_TLS_CLIENT_CERT_PATH: files.clientCertFile,
    TEMPORAL_TLS_CLIENT_KEY_PATH: files.clientKeyFile,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: files.caFile,
    TEMPORAL_TLS_SERVER_NAME: cluster.tls.serverName,
  };
}

export interface ClusterHost {
  host: KeeperHost;
  client: Client;
  worker: Worker;
  running: Promise<void>;
  stop(): Promise<void>;
}

/** A keeper host with its worker running against the cluster, connected from `env` as the worker connects. */
export async function startClusterHost(
  settings: Settings,
  parts: { db: StateDb; docker: DockerClient; log: Logger },
  env: Record<string, string>,
  workflowBundlePath: string,
): Promise<ClusterHost> {
  const target = resolveTemporalTarget(settings, env);
  if (!target.address) throw new Error('the cluster environment names no address');
  const resolved = { ...target, address: target.address };
  const native: NativeConnection = await connectNative(resolved);
  const connection = await connectClient(resolved);
  const host = createKeeperHost(settings, parts);
  const worker = await host.createWorker({
    connection: native,
    namespace: target.namespace,
    workflowBundle: { codePath: workflowBundlePath },
    shutdownGraceTime: '2s',
  });
  const running = worker.run();
  return {
    host,
    worker,
    running,
    client: new TemporalClient({ connection, namespace: target.namespace }),
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running.catch(() => undefined);
      await connection.close();
      await native.close();
    },
  };
}
