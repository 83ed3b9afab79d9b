/** What `keeper worker` prints once it runs: where it runs, its tenant runtime, its alerts, the UI, its schedules. */
import path from 'node:path';
import type { StartedWorker } from '../app/keeper';
import { planNotification } from '../host/notifications';
import { ids, taskQueueFor } from '../ids';
import { SCHEDULED_LOOPS } from '../loops/registry';
import { hostRunsQuery } from '../search-attributes';
import { describeTarget } from '../temporal/connection';
import { webhooksWords } from './words';

export async function workerBanner({ client, settings, temporal, tenants }: StartedWorker): Promise<string> {
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
  for (const { name } of SCHEDULED_LOOPS) {
    const d = await client.schedule.getHandle(ids.schedule(settings.hostId, name)).describe();
    lines.push(`    ${name.padEnd(10)} ${d.state.paused ? 'paused' : 'next run ' + (d.info.nextActionTimes[0]?.toISOString() ?? '-')}`);
  }
  return lines.join('\n') + '\n';
}
