/**
 * This host's three schedules, created or updated at worker start and never duplicated. Each has overlap SKIP
 * and a short catch-up window, so an outage is not followed by a backlog of ticks.
 */
import { createHash } from 'node:crypto';
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import { ids, LOOP_LIST, LOOPS, taskQueueFor, type LoopName } from '../ids';
import { hostAttributes, serviceAttributes } from '../search-attributes';
import type { Settings } from '../settings';
import * as workflows from '../workflows';
import { moreEventsSignal } from '../workflows/messages';
import { reconcileOnEvents } from '../workflows/reconcileOnEvents';
import { withOperatorClient } from './client';

export const CATCHUP_WINDOW = '1 minute';

/**
 * Where in its interval a host's loop fires, in ms: fixed per host and loop (a hash of both), so that a fleet's
 * schedules do not all fire at the epoch-aligned instant. 500 hosts' hourly pool and GC schedules firing in the same
 * second left a quarter of the runs unstarted within the catch-up window (docs/benchmarks.md, the fleet).
 */
export function schedulePhaseMs(hostId: string, loop: LoopName, everyMs: number): number {
  const hash = createHash('sha256').update(`${hostId}/${loop}`).digest().readUInt32BE(0);
  return Math.floor((hash / 2 ** 32) * (everyMs / 1000)) * 1000;
}

type Loop = (typeof LOOP_LIST)[number];
type WorkflowType = keyof typeof workflows;

/**
 * The workflow each loop's schedule starts, from the loop list (src/ids.ts). Indexing the bundle's exports by the
 * list's types is the check that each is a workflow keeper registers: a type that is none does not compile.
 */
export const LOOP_WORKFLOWS = Object.fromEntries(LOOP_LIST.map((l) => [l.name, workflows[l.workflowType]])) as {
  [L in Loop as L['name']]: (typeof workflows)[L['workflowType']];
};
/** Likewise for the loops' other runs. */
export const LOOP_OTHER_RUNS: Readonly<Record<string, WorkflowType>> = Object.assign(
  {},
  ...LOOP_LIST.map((l) => l.otherRuns),
) satisfies Record<string, WorkflowType>;

export function scheduleOptions(loop: LoopName, settings: Settings, now = new Date()): ScheduleOptions {
  const every: Record<LoopName, number> = {
    reconcile: settings.reconcileIntervalMs,
    gc: settings.gcIntervalMs,
    pool: settings.poolIntervalMs,
  };
  return {
    scheduleId: ids.schedule(settings.hostId, loop),
    spec: {
      intervals: [{ every: every[loop], offset: schedulePhaseMs(settings.hostId, loop, every[loop]) }],
      // GC's first sweep waits, so that a restarted host has settled before anything is removed.
      startAt: loop === 'gc' ? new Date(now.getTime() + settings.gcFirstDelayMs) : undefined,
    },
    action: {
      type: 'startWorkflow',
      workflowType: LOOP_WORKFLOWS[loop],
      taskQueue: taskQueueFor(settings.hostId),
      workflowId: ids.schedule(settings.hostId, loop),
      args: [],
      workflowExecutionTimeout: '10 minutes',
      typedSearchAttributes: hostAttributes(settings.hostId),
    },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: CATCHUP_WINDOW, pauseOnFailure: false },
  };
}

/** Creates each schedule, or updates it in place (keeping its paused state) if it exists. */
export async function ensureSchedules(client: Client, settings: Settings, loops: readonly LoopName[] = LOOPS): Promise<void> {
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

/**
 * The event watcher's request for a tick: signal-with-start of the host's event tick, not a schedule trigger,
 * so a crash costs one start (or one signal into the tick already running, which then looks again) instead of
 * a schedule patch and a run with the schedule's own timer, memo and markers. The run carries the service of
 * the event that asked for it, so the UI finds it by host and service. A paused reconcile schedule is left
 * alone, as before: an operator's pause covers the events too.
 */
export async function triggerReconcile(client: Client, hostId: string, serviceId?: string, why = 'docker events'): Promise<boolean> {
  if ((await client.schedule.getHandle(ids.schedule(hostId, 'reconcile')).describe()).state.paused) return false;
  await client.workflow.signalWithStart(reconcileOnEvents, {
    workflowId: ids.eventTick(hostId),
    taskQueue: taskQueueFor(hostId),
    signal: moreEventsSignal,
    signalArgs: [],
    workflowExecutionTimeout: '10 minutes',
    typedSearchAttributes: serviceId ? serviceAttributes(hostId, serviceId) : hostAttributes(hostId),
    staticSummary: `reconcile tick for ${why}${serviceId ? ` of ${serviceId}` : ''}`,
  });
  return true;
}

/** Disk pressure's request for a sweep now (src/host/disk-watcher.ts); an operator's pause is respected. */
export function triggerGcSweep(client: Client, hostId: string): Promise<boolean> {
  return triggerLoop(client, hostId, 'gc', { unlessPaused: true });
}

/**
 * After a claim: asks the pool schedule for a refill, best effort. The claim has already succeeded, so a
 * failure here only means the next pool tick refills. A paused pool schedule (e.g. before a drain) is not
 * triggered. Returns what happened, in words.
 */
export async function requestPoolRefill(settings: Settings): Promise<string> {
  try {
    const triggered = await withOperatorClient(
      settings,
      (client) => triggerLoop(client, settings.hostId, 'pool', { unlessPaused: true }),
      2000,
    );
    return triggered ? 'triggered' : 'not triggered: the pool schedule is paused';
  } catch (err) {
    return `not triggered (${(err as Error).message.split('\n')[0]}); the next pool tick refills`;
  }
}

/**
 * After a template image's background pull ended, or when a failed one's next try is due: asks the pool schedule for
 * a refill through the worker's own client, best effort (unless paused; BUFFER_ONE), so the pool fills without
 * waiting for its next run. Returns what happened, in words.
 */
export async function requestRefillAfterPull(client: Client, hostId: string): Promise<string> {
  try {
    return (await triggerLoop(client, hostId, 'pool', { unlessPaused: true })) ? 'triggered' : 'not triggered: the pool schedule is paused';
  } catch (err) {
    const e = err as Error;
    return `not triggered (${e.message.split('\n')[0] || e.name}); the next pool run refills`;
  }
}
