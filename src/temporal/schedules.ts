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
    reconcile: settings.reconcileIntervalMs,
    gc: settings.gcIntervalMs,
    pool: settings.poolIntervalMs,
  };
  return {
    scheduleId: ids.schedule(settings.hostId, loop),
    spec: {
      intervals: [{ every: every[loop] }],
      // GC's first sweep waits, so that a restarted host has settled before anything is removed.
      startAt: loop === 'gc' ? new Date(now.getTime() + settings.gcFirstDelayMs) : undefined,
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
 * Starts one run of `loop` now through the host's schedule, so the schedule stays the one thing that starts
 * runs (same workflow id prefix, search attributes and timeout). BUFFER_ONE, not the schedule's SKIP: a
 * request during a running run is never dropped; it yields exactly one follow-up run, which sees whatever
 * happened during the first. With `unlessPaused`, a paused schedule is left alone (a trigger would run even
 * on a paused one): keeper's own requests must respect an operator's pause; the operator's own do not.
 */
export async function triggerLoop(client: Client, hostId: string, loop: LoopName, opts: { unlessPaused?: boolean } = {}): Promise<boolean> {
  const handle = client.schedule.getHandle(ids.schedule(hostId, loop));
  if (opts.unlessPaused && (await handle.describe()).state.paused) return false;
  await handle.trigger(ScheduleOverlapPolicy.BUFFER_ONE);
  return true;
}

/** The event watcher's request for a tick. */
export function triggerReconcile(client: Client, hostId: string): Promise<boolean> {
  return triggerLoop(client, hostId, 'reconcile', { unlessPaused: true });
}
