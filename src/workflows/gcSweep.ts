/**
 * One garbage-collection sweep of this host, started by the `gc` schedule (no argument) or by
 * `keeper gc --once [--dry-run]`. It asks the worker for the host's GC classes (a local activity: its result is
 * recorded, so a replay sees the same list, whatever the worker's registry holds by then) and runs each through
 * one generic activity: containers first, because removing them frees volumes, networks and images; the other
 * classes then side by side. A class that fails is reported, not fatal: the rest of the sweep still runs.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
} from '@temporalio/workflow';
import type { GcActivities } from '../activities/gc';
import {
  PER_CLASS_ACTIVITIES,
  type GcClass,
  type GcClassInput,
  type GcClassResult,
  type GcClassSummary,
  type GcSweepOptions,
  type GcSweepResult,
} from '../contracts/gc';
import { HEARTBEAT_TIMEOUT_MS } from '../contracts/timeouts';
import { goneContainers, sweepInStages } from '../policy/gc';
import { gcWords } from '../policy/run-words';
import { sweepActed } from '../policy/tick-summary';
import { GC_BUILD_IMAGES_PATCH, GC_CLASS_REGISTRY_PATCH, GC_CRASH_RECORDS_PATCH, LOCAL_LOOPS_PATCH } from './patches';

// Containers, then the rest side by side: two activity spans of at most 4 minutes each fit the schedule's
// 10-minute run timeout. A class cut off by its timeout is reported; the next sweep picks up the rest. One retry,
// a second later, is for a transient engine error; a class that still fails waits for the next sweep.
const CLASS = { startToCloseTimeout: '3m', scheduleToCloseTimeout: '4m', retry: { maximumAttempts: 2, initialInterval: '1s' } } as const;
/** Sweeps started before the local-activities patch replay remote activities; a sweep now is one workflow task. */
const remote = proxyActivities<GcActivities>({ heartbeatTimeout: HEARTBEAT_TIMEOUT_MS, ...CLASS });
const local = proxyLocalActivities<GcActivities>(CLASS);
/** The class list is read from memory: it fails only with the worker. */
const { gcClasses } = proxyLocalActivities<GcActivities>({ startToCloseTimeout: '10s', retry: { maximumAttempts: 3 } });

export async function gcSweep(options: GcSweepOptions = {}): Promise<GcSweepResult> {
  const dryRun = options.dryRun ?? false;
  const isLocal = patched(LOCAL_LOOPS_PATCH);
  const gc = isLocal ? local : remote;
  const classes = isLocal && patched(GC_CLASS_REGISTRY_PATCH) ? await sweepRegistry(dryRun) : await sweepPerClass(gc, dryRun);
  const summary = classes.map(summarise);
  const result: GcSweepResult = { dryRun, classes, summary, totals: totalsOf(summary) };
  if (isLocal && sweepActed(result)) setCurrentDetails(`${dryRun ? 'dry run: ' : ''}${gcWords(result)}`);
  if (!dryRun) {
    try {
      await gc.recordGcSweep({ summary, totals: result.totals });
    } catch {
      // The sweep itself is done; a DB that cannot take the summary must not fail it.
    }
  }
  return result;
}

/** The host's classes, as its worker's registry lists them, each through the generic class activity. */
async function sweepRegistry(dryRun: boolean): Promise<GcClassResult[]> {
  const listed = await gcClasses();
  return sweepInStages(listed, dryRun, (cls, input) => runClass(cls, input, (i) => local.runGcClass({ ...i, cls })));
}

/**
 * How sweeps started before the class registry ran, and so replay: one activity per class, in this order, two
 * classes behind the patches they came with. History: never changes, and no class is added here.
 */
async function sweepPerClass(gc: GcActivities, dryRun: boolean): Promise<GcClassResult[]> {
  type Cls = keyof typeof PER_CLASS_ACTIVITIES;
  const run = (cls: Cls, input: Omit<GcClassInput, 'dryRun'>) =>
    runClass(cls, { ...input, dryRun }, (i) => gc[PER_CLASS_ACTIVITIES[cls]](i));
  const containers = await run('containers', {});
  const input = { goneContainers: goneContainers([containers]) };
  const runs = [run('volumes', input), run('networks', input), run('images', input), run('buildDirs', {}), run('snapshots', input)];
  if (patched(GC_CRASH_RECORDS_PATCH)) runs.push(run('crashRecords', {}));
  if (patched(GC_BUILD_IMAGES_PATCH)) runs.push(run('buildImages', input));
  return [containers, ...(await Promise.all(runs))];
}

/** One class's activity; one that fails (after its retry) is the class's error, not the sweep's. */
async function runClass(cls: GcClass, input: GcClassInput, run: (input: GcClassInput) => Promise<GcClassResult>): Promise<GcClassResult> {
  try {
    return await run(input);
  } catch (err) {
    const cause = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause.message : undefined;
    const error = cause ?? (err instanceof Error ? err.message : String(err));
    return { class: cls, dryRun: input.dryRun, planned: [], removed: [], failed: [], skipped: [], kept: {}, error };
  }
}

function summarise(r: GcClassResult): GcClassSummary {
  return {
    class: r.class,
    planned: r.dryRun ? r.planned.length : r.removed.length + r.failed.length,
    removed: r.removed.length,
    failed: r.failed.length,
    skipped: r.skipped.length,
    ...(r.error ? { error: r.error } : {}),
  };
}

function totalsOf(summary: GcClassSummary[]): GcSweepResult['totals'] {
  const sum = (k: 'planned' | 'removed' | 'failed' | 'skipped') => summary.reduce((n, s) => n + s[k], 0);
  return {
    planned: sum('planned'),
    removed: sum('removed'),
    failed: sum('failed'),
    skipped: sum('skipped'),
    classErrors: summary.filter((s) => s.error).length,
  };
}
