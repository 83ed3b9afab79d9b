/**
 * This host's three schedules, created or updated at worker start and never duplicated. Each has overlap SKIP
 * and a short catch-up window, so an outage is not followed by a backlog of ticks.
 */
import { createHash } from 'node:crypto';
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import { ids, LOOP_LIST, LOOPS, loopRunTypes, taskQueueFor, type LoopName } from '../ids';
import { hostAttributes, hostRunsQuery } from '../search-attributes';
import type { Settings } from '../settings';
import * as workflows from '../workflows';

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

/** A loop's schedule as `keeper schedules list` shows it. */
export interface ScheduleRow {
  loop: LoopName;
  scheduleId: string;
  paused: boolean;
  note: string;
  every: string;
  nextRun: string | null;
  /** The schedule's own last start (a backstop run, or a trigger). */
  lastRun: string | null;
  /** The newest run of the loop however it started (its schedule, an event, a look, a command), from visibility. */
  newestRun: { startedAt: string; type: string; status: string } | null;
}

/** This host's schedules, one row per loop. */
export async function describeSchedules(client: Client, hostId: string): Promise<ScheduleRow[]> {
  const out: ScheduleRow[] = [];
  for (const entry of LOOP_LIST) {
    const loop = entry.name;
    const d = await client.schedule.getHandle(ids.schedule(hostId, loop)).describe();
    const every = d.spec.intervals?.[0]?.every;
    out.push({
      loop,
      scheduleId: d.scheduleId,
      paused: d.state.paused,
      note: d.state.note ?? '',
      every: typeof every === 'number' ? `${every / 1000}s` : String(every ?? ''),
      nextRun: d.info.nextActionTimes[0]?.toISOString() ?? null,
      lastRun: d.info.recentActions.at(-1)?.takenAt.toISOString() ?? null,
      newestRun: await newestRun(client, hostId, entry),
    });
  }
  return out;
}

/** The newest run of a loop on this host: visibility lists running runs first, then the most recently closed. */
async function newestRun(client: Client, hostId: string, loop: (typeof LOOP_LIST)[number]): Promise<ScheduleRow['newestRun']> {
  const types = loopRunTypes(loop)
    .map((t) => `WorkflowType="${t}"`)
    .join(' OR ');
  for await (const run of client.workflow.list({ query: `${hostRunsQuery(hostId)} AND (${types})`, pageSize: 1 })) {
    return { startedAt: run.startTime.toISOString(), type: run.type, status: run.status.name.toLowerCase() };
  }
  return null;
}

/** Pauses or resumes a loop's schedule, with a note that says who did. */
export async function setSchedulePaused(client: Client, hostId: string, loop: LoopName, paused: boolean, note: string): Promise<void> {
  const handle = client.schedule.getHandle(ids.schedule(hostId, loop));
  if (paused) await handle.pause(note);
  else await handle.unpause(note);
}
