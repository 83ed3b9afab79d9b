/**
 * One garbage-collection sweep of this host, started by the `gc` schedule (no argument) or by
 * `keeper gc --once [--dry-run]`. Containers go first, because removing them frees volumes, networks and
 * images; the other classes then run side by side. Each class is its own activity, and a class that fails is
 * reported, not fatal: the rest of the sweep still runs.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { GcClass, GcClassInput, GcClassResult, GcClassSummary, GcSweepOptions, GcSweepResult } from '../contracts/gc';
import { HEARTBEAT_TIMEOUT_MS } from '../contracts/timeouts';
import { gcWords } from '../policy/run-words';
import { sweepActed } from '../policy/tick-summary';
import { LOCAL_LOOPS_PATCH } from './patches';

// Containers, then the rest side by side: two activity spans of at most 4 minutes each fit the schedule's
// 10-minute run timeout. A class cut off by its timeout is reported; the next sweep picks up the rest. One retry,
// a second later, is for a transient engine error; a class that still fails waits for the next sweep.
const CLASS = { startToCloseTimeout: '3m', scheduleToCloseTimeout: '4m', retry: { maximumAttempts: 2, initialInterval: '1s' } } as const;
/** Sweeps started before the local-activities patch replay remote activities; a sweep now is one workflow task. */
const remote = proxyActivities<Activities>({ heartbeatTimeout: HEARTBEAT_TIMEOUT_MS, ...CLASS });
const local = proxyLocalActivities<Activities>(CLASS);

export async function gcSweep(options: GcSweepOptions = {}): Promise<GcSweepResult> {
  const dryRun = options.dryRun ?? false;
  const isLocal = patched(LOCAL_LOOPS_PATCH);
  const gc = isLocal ? local : remote;
  const containers = await runClass('containers', dryRun, (i) => gc.removeOrphanContainers(i), {});
  const gone = (dryRun ? containers.planned : containers.removed).flatMap((c) => (c.id ? [c.id] : []));
  const input: Omit<GcClassInput, 'dryRun'> = { goneContainers: gone };
  const runs = [
    runClass('volumes', dryRun, (i) => gc.removeOrphanVolumes(i), input),
    runClass('networks', dryRun, (i) => gc.removeEmptyTenantNetworks(i), input),
    runClass('images', dryRun, (i) => gc.removeDanglingImages(i), input),
    runClass('buildDirs', dryRun, (i) => gc.removeOldBuildDirs(i), {}),
    runClass('snapshots', dryRun, (i) => gc.removeExpiredSnapshots(i), input),
  ];
  // Patched: a sweep that started on a worker without the crash-record class replays without it.
  if (patched('gc-crash-records')) runs.push(runClass('crashRecords', dryRun, (i) => gc.removeOldCrashRecords(i), {}));
  if (patched('gc-build-images')) runs.push(runClass('buildImages', dryRun, (i) => gc.removeBuildImages(i), input));
  const rest = await Promise.all(runs);
  const classes = [containers, ...rest];
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

async function runClass(
  cls: GcClass,
  dryRun: boolean,
  run: (input: GcClassInput) => Promise<GcClassResult>,
  input: Omit<GcClassInput, 'dryRun'>,
): Promise<GcClassResult> {
  try {
    return await run({ ...input, dryRun });
  } catch (err) {
    const cause = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause.message : undefined;
    const error = cause ?? (err instanceof Error ? err.message : String(err));
    return { class: cls, dryRun, planned: [], removed: [], failed: [], skipped: [], kept: {}, error };
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
