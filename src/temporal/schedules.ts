/**
 * A host's loops' backstop schedules, created or updated at worker start and never duplicated: one per loop that
 * declares one (src/loops/, whose registry hands them in). Each has overlap SKIP and a short catch-up window, so an
 * outage is not followed by a backlog of runs.
 */
import { createHash } from 'node:crypto';
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import { ids, taskQueueFor } from '../ids';
import { hostAttributes, hostRunsQuery } from '../search-attributes';
import type * as workflows from '../workflows';

export const CATCHUP_WINDOW = '1 minute';

/**
 * Where in its interval a host's loop fires, in ms: fixed per host and loop (a hash of both), so that a fleet's
 * schedules do not all fire at the epoch-aligned instant. 500 hosts' hourly pool and GC schedules firing in the same
 * second left a quarter of the runs unstarted within the catch-up window (docs/benchmarks.md, the fleet).
 */
export function schedulePhaseMs(hostId: string, loop: string, everyMs: number): number {
  const hash = createHash('sha256').update(`${hostId}/${loop}`).digest().readUInt32BE(0);
  return Math.floor((hash / 2 ** 32) * (everyMs / 1000)) * 1000;
}

/**
 * A workflow type the bundle registers: a loop that names one that is none does not compile (src/loops/unit.ts
 * types its workflow types by this).
 */
export type WorkflowType = keyof typeof workflows;

/** What a loop's backstop schedule is made of, its settings read (src/loops/registry.ts makes them). */
export interface LoopSchedule {
  loop: string;
  /** The workflow type its schedule starts. */
  workflowType: WorkflowType;
  everyMs: number;
  /** No run before this long after the worker starts (a restarted host settles first), when given. */
  firstDelayMs?: number;
}

export function scheduleOptions(s: LoopSchedule, hostId: string, now = new Date()): ScheduleOptions {
  return {
    scheduleId: ids.schedule(hostId, s.loop),
    spec: {
      intervals: [{ every: s.everyMs, offset: schedulePhaseMs(hostId, s.loop, s.everyMs) }],
      startAt: s.firstDelayMs === undefined ? undefined : new Date(now.getTime() + s.firstDelayMs),
    },
    action: {
      type: 'startWorkflow',
      workflowType: s.workflowType,
      taskQueue: taskQueueFor(hostId),
      workflowId: ids.schedule(hostId, s.loop),
      args: [],
      workflowExecutionTimeout: '10 minutes',
      typedSearchAttributes: hostAttributes(hostId),
    },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: CATCHUP_WINDOW, pauseOnFailure: false },
  };
}

/** Creates each schedule, or updates it in place (keeping its paused state) if it exists. */
export async function ensureSchedules(client: Client, hostId: string, schedules: readonly LoopSchedule[]): Promise<void> {
  for (const schedule of schedules) {
    const options = scheduleOptions(schedule, hostId);
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
  loop: string;
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

/** A scheduled loop as `keeper schedules list` describes it: its name, and the workflow types of its runs. */
export interface ScheduledRuns {
  loop: string;
  runTypes: readonly string[];
}

/** This host's schedules, one row per loop. */
export async function describeSchedules(client: Client, hostId: string, loops: readonly ScheduledRuns[]): Promise<ScheduleRow[]> {
  const out: ScheduleRow[] = [];
  for (const entry of loops) {
    const loop = entry.loop;
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
async function newestRun(client: Client, hostId: string, loop: ScheduledRuns): Promise<ScheduleRow['newestRun']> {
  const types = loop.runTypes.map((t) => `WorkflowType="${t}"`).join(' OR ');
  for await (const run of client.workflow.list({ query: `${hostRunsQuery(hostId)} AND (${types})`, pageSize: 1 })) {
    return { startedAt: run.startTime.toISOString(), type: run.type, status: run.status.name.toLowerCase() };
  }
  return null;
}

/** Pauses or resumes a loop's schedule, with a note that says who did. */
export async function setSchedulePaused(client: Client, hostId: string, loop: string, paused: boolean, note: string): Promise<void> {
  const handle = client.schedule.getHandle(ids.schedule(hostId, loop));
  if (paused) await handle.pause(note);
  else await handle.unpause(note);
}
