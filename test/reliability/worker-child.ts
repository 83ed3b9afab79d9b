/**
 * A keeper worker in its own process, so that a test can SIGKILL it (fault 1) or outlive a Temporal server
 * (fault 3). Settings come from the KEEPER_* environment as in production; the workflow bundle is the one
 * global-setup built (KEEPER_TEST_BUNDLE).
 *
 * KEEPER_TEST_KILL_ON_STOP=1 arms the one fault hook: the first Docker stop this worker asks for kills the
 * process with SIGKILL before the request is sent. In a reconcile tick the first stop is the one for a circuit
 * that has just opened, so the process dies after the crash is recorded and the circuit row opened, and before
 * the container is stopped or the circuit workflow started. The hook lives here, in the test, not in src/.
 *
 * KEEPER_TEST_SCHEDULES=1 also creates this host's schedules, as `keeper worker` does.
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { openStateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { loadSettings } from '../../src/settings';
import { createKeeperHost } from '../../src/app/keeper-host';

class KillingDockerClient extends DockerClient {
  override async stopContainer(id: string, graceSeconds?: number): Promise<void> {
    process.stdout.write(`killing myself before stopping ${id.slice(0, 12)}\n`);
    process.kill(process.pid, 'SIGKILL');
    return super.stopContainer(id, graceSeconds);
  }
}

async function main(): Promise<void> {
  const settings = loadSettings();
  const db = openStateDb(settings.db, { create: false });
  const docker = process.env.KEEPER_TEST_KILL_ON_STOP === '1' ? new KillingDockerClient() : new DockerClient();
  const connection = await NativeConnection.connect({ address: settings.temporalAddress! });
  const host = createKeeperHost(settings, { db, docker });
  const worker = await host.createWorker({
    connection,
    namespace: settings.namespace ?? 'default',
    workflowBundle: { codePath: process.env.KEEPER_TEST_BUNDLE! },
    shutdownGraceTime: '1s',
  });
  if (process.env.KEEPER_TEST_SCHEDULES === '1') {
    const client = new Client({
      connection: await Connection.connect({ address: settings.temporalAddress! }),
      namespace: settings.namespace,
    });
    await host.ensureSchedules(client);
    await client.connection.close();
  }
  process.stdout.write('worker ready\n');
  await worker.run();
  await connection.close();
  db.close();
}

main().catch((err) => {
  process.stderr.write(`worker-child: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
