import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { HealthActivities } from '../activities/health';
import type { HostHealth } from '../contracts/health';
import { HEARTBEAT_TIMEOUT_MS } from '../contracts/timeouts';

const { readEngineInfo, readSchemaVersion } = proxyActivities<HealthActivities>({
  heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
  startToCloseTimeout: '30s',
  scheduleToCloseTimeout: '2m',
  retry: { maximumAttempts: 3 },
});

/** Reads this host's engine and DB through activities: proof that the whole chain works. */
export async function hostHealth(): Promise<HostHealth> {
  const [engine, schema] = await Promise.all([readEngineInfo(), readSchemaVersion()]);
  return { taskQueue: workflowInfo().taskQueue, engine, schema };
}
