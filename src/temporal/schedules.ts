/**
 * This host's three schedules, created or updated at worker start and never duplicated. Each has overlap SKIP
 * and a short catch-up window, so an outage is not followed by a backlog of ticks.
 */
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import { ids, KeeperHost, LOOPS, taskQueueFor, type LoopName } from '../shared';
import type { Settings } from '../settings';

export const CATCHUP_WINDOW = '1 minute';

/** The workflow type each loop's schedule starts. */
export const LOOP_WORKFLOWS: Record<LoopName, string> = {
  reconcile: 'reconcileTick',
  gc: 'gcSweep',
  pool: 'poolRefill',
};

export function scheduleOptions(loop: LoopName, settings: Settings, now = new Date()): ScheduleOptions {
  const every: Record<LoopName, number> = {
    reconcile: settings.reconcileInterval,
    gc: settings.gcInterval,
    pool: settings.poolInterval,
  };
  return {
    scheduleId: ids.schedule(settings.hostId, loop),
    spec: {
      intervals: [{ every: every[loop] }],
      // GC's first sweep waits, so that a restarted host has settled before anything is removed.
      startAt: loop === 'gc' ? new Date(now.getTime() + settings.gcFirstDelay) : undefined,
    },
    action: {
      type: 'startWorkflow',
      workflowType: LOOP_WORKFLOWS[loop],
      taskQueue: taskQueueFor(settings.hostId),
      workflowId: `keeper-${settings.hostId}-${loop}`,
      args: [],
      workflowExecutionTimeout: '10 minutes',
      typedSearchAttributes: [{ key: KeeperHost, value: settings.hostId }],
    },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: CATCHUP_WINDOW, pauseOnFailure: false },
  };
}

/** Creates each schedule, or updates it in place (keeping its paused state) if it exists. */
export async function ensureSchedules(client: Client, settings: Settings, loops: LoopName[] = LOOPS): Promise<void> {
  for (const loop of loops) {
    const options = scheduleOptions(loop, settings);
    try {
      await client.schedule.create(options);
    } catch (err) {
      if (!(err instanceof ScheduleAlreadyRunning)) throw err;
      await client.schedule.getHandle(options.scheduleId).update((prev) => ({
        spec: options.spec,
        action: options.action,
        policies: options.policies,
        state: { paused: prev.state.paused, note: prev.state.note },
      }));
    }
  }
}

/**
 * Asks for one reconcile tick now, through the host's schedule so it stays the one thing that starts ticks
 * (same workflow id prefix, search attributes and timeout). BUFFER_ONE: a request during a running tick
 * yields exactly one follow-up tick, which sees whatever happened during the first.
 */
export async function triggerReconcile(client: Client, hostId: string): Promise<boolean> {
  const handle = client.schedule.getHandle(ids.schedule(hostId, 'reconcile'));
  // A trigger runs even on a paused schedule; an operator's pause must hold against events too.
  if ((await handle.describe()).state.paused) return false;
  await handle.trigger(ScheduleOverlapPolicy.BUFFER_ONE);
  return true;
}
