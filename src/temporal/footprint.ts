/**
 * What one keeper host id has on Temporal: its loops' schedules (the loops' registry, src/loops/registry.ts, names
 * them) and its running workflows (found by the KeeperHost search attribute, or its task queue), and the two ways
 * `keeper uninstall` removes them. A worker that starts under a new host id uses it to warn of the old id's
 * leftovers (src/app/other-host-ids.ts).
 */
import { ScheduleNotFoundError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { ids, taskQueueFor } from '../ids';
import { KeeperHost } from '../search-attributes';
import type { WorkflowType } from './schedules';

const HEALTH: WorkflowType = 'hostHealth';

/** A host's workflow types as uninstall treats them: the loops' runs (given), the health check's, circuits, alerts. */
export function hostWorkflowTypes(loopRunTypes: readonly string[]): {
  circuit: WorkflowType;
  alert: WorkflowType;
  stoppable: readonly string[];
} {
  return { circuit: 'circuitBreaker', alert: 'notifyOperators', stoppable: [...loopRunTypes, HEALTH] };
}

export interface HostFootprint {
  hostId: string;
  schedules: { loop: string; scheduleId: string; paused: boolean }[];
  /** Running workflows of the host: loop runs, circuit breakers, alerts. */
  running: { workflowId: string; type: string; startedAt: string }[];
}

/** The host's schedules of the `scheduled` loops that exist, and its running workflows. */
export async function hostFootprint(client: Client, hostId: string, scheduled: readonly string[]): Promise<HostFootprint> {
  const schedules: HostFootprint['schedules'] = [];
  for (const loop of scheduled) {
    const scheduleId = ids.schedule(hostId, loop);
    try {
      const d = await client.schedule.getHandle(scheduleId).describe();
      schedules.push({ loop, scheduleId, paused: d.state.paused });
    } catch (err) {
      if (!(err instanceof ScheduleNotFoundError)) throw err;
    }
  }
  const running: HostFootprint['running'] = [];
  const query = `ExecutionStatus="Running" AND (${KeeperHost.name}="${hostId}" OR TaskQueue="${taskQueueFor(hostId)}")`;
  for await (const w of client.workflow.list({ query })) {
    running.push({ workflowId: w.workflowId, type: w.type, startedAt: w.startTime.toISOString() });
  }
  return { hostId, schedules, running };
}

/**
 * A live worker long-polls its queue without pause, so its last poll is never much older than one long poll
 * (about a minute); the server keeps listing a stopped worker's pollers for minutes, with their last poll's time.
 */
export const LIVE_POLL_WITHIN_MS = 70_000;

/** How long ago a worker last polled the queue's workflow tasks (ms), or undefined when none is listed. */
export async function lastPollAgoMs(client: Client, taskQueue: string, nowMs = Date.now()): Promise<number | undefined> {
  const response = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  const times = (response.pollers ?? []).map((p) => timestampMs(p.lastAccessTime));
  return times.length === 0 ? undefined : Math.max(0, nowMs - Math.max(...times));
}

/**
 * A protobuf Timestamp in epoch ms (0 when absent). The SDK's own converters are internal (`@hidden`, deprecated
 * in @temporalio/common), so keeper reads the two fields itself; `seconds` is a Long, which Number() reads.
 */
function timestampMs(ts: temporal.api.taskqueue.v1.IPollerInfo['lastAccessTime']): number {
  if (!ts) return 0;
  return Number(ts.seconds ?? 0) * 1000 + Math.floor((ts.nanos ?? 0) / 1_000_000);
}

/** Deletes a schedule; one already gone counts as deleted (a second uninstall, or a race with another). */
export async function deleteSchedule(client: Client, scheduleId: string): Promise<void> {
  try {
    await client.schedule.getHandle(scheduleId).delete();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
}

/** Terminates a running workflow; one that has closed meanwhile is left as it ended. */
export async function terminateWorkflow(client: Client, workflowId: string, reason: string): Promise<boolean> {
  try {
    await client.workflow.getHandle(workflowId).terminate(reason);
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/** The words for what a host id has left on Temporal, or '' when nothing. */
export function footprintWords(f: HostFootprint): string {
  const parts = [];
  if (f.schedules.length > 0) parts.push(`${f.schedules.length} schedule${f.schedules.length === 1 ? '' : 's'}`);
  if (f.running.length > 0) parts.push(`${f.running.length} running workflow${f.running.length === 1 ? '' : 's'}`);
  return parts.join(' and ');
}
