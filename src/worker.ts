/**
 * `keeper worker` (npm start): this host's worker. It polls `keeper-<host>` with every workflow and this host's
 * activities, ensures the host's schedules, follows Docker's events, and shuts down gracefully on SIGINT or
 * SIGTERM. It connects as Temporal's own tools do (src/temporal/connection.ts); with no address configured
 * anywhere it runs an embedded dev server, persistent next to the state DB.
 */
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { SHUTDOWN_GRACE } from './app/keeper-host';
import { openWorkerProcess, type WorkerProcess } from './app/worker-process';
import type { HostWatch } from './app/keeper-host';
import { planNotification } from './host/notifications';
import { ids, LOOPS, taskQueueFor } from './ids';
import type { Logger } from './log';
import { webhooksWords } from './cli/words';
import { hostRunsQuery } from './search-attributes';
import { recordWorkerStart } from './host/worker-config';
import type { Settings } from './settings';
import { describeTarget } from './temporal/connection';
import { warnOfOtherHostIds } from './app/other-host-ids';

/** Runs this host until SIGINT or SIGTERM, then shuts down gracefully. */
export async function runWorker(configured: Settings): Promise<void> {
  const opened = await openWorkerProcess(configured);
  const { settings, log, host, client, temporal } = opened;
  let watch: HostWatch | undefined;
  try {
    const worker = await host.createWorker({ connection: temporal.native, namespace: temporal.target.namespace });
    await host.ensureSchedules(client);
    recordWorkerStart({ db: host.deps.db, settings }, describeTarget(temporal.target), temporal.embedded !== undefined);
    await warnOfOtherHostIds(client, host.deps.db, settings.hostId, settings.db, log);
    watch = host.watch(client);
    watch.start();
    stopOnSignals(log, () => worker.shutdown());
    process.stdout.write(await banner(client, opened));
    log.info('keeper worker started', {
      taskQueue: taskQueueFor(settings.hostId),
      temporal: describeTarget(temporal.target),
      ui: temporal.uiUrl,
    });
    await worker.run();
  } finally {
    await watch?.stop();
    await opened.close();
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

async function banner(client: Client, { settings, temporal, tenants }: WorkerProcess): Promise<string> {
  const query = encodeURIComponent(hostRunsQuery(settings.hostId));
  const lines = [
    'keeper is running',
    `  host        ${settings.hostId} (task queue ${taskQueueFor(settings.hostId)})`,
    `  state DB    ${path.resolve(settings.db)}`,
    `  tenants     runtime ${tenants.runtime}: ${tenants.isolation}`,
    ...(tenants.fallbackReason ? [`              why: ${tenants.fallbackReason}`] : []),
    `  temporal    ${describeTarget(temporal.target)}${temporal.embedded ? ' (embedded dev server)' : ''}`,
    `  alerts      ${webhooksWords(
      planNotification({ settings }).targets.map((t) => t.shown),
      settings.notifySecret !== undefined,
    )}`,
    `  UI          ${temporal.uiUrl ? `${temporal.uiUrl}/namespaces/${temporal.target.namespace}/workflows?query=${query}` : 'your Temporal UI'}`,
    '  schedules',
  ];
  for (const loop of LOOPS) {
    const d = await client.schedule.getHandle(ids.schedule(settings.hostId, loop)).describe();
    lines.push(`    ${loop.padEnd(10)} ${d.state.paused ? 'paused' : 'next run ' + (d.info.nextActionTimes[0]?.toISOString() ?? '-')}`);
  }
  return lines.join('\n') + '\n';
}
