/**
 * The gcSweep workflow's activities: the host's GC classes (the registry, src/host/gc/registry.ts), one generic
 * activity that runs a class by name, the one activity per class that sweeps started before the registry still
 * call (generated from the registry by class), and the record of the sweep's summary.
 */
import { activityInfo } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { HostDeps } from '../host/deps';
import { GC_CLASSES, gcClassNamed, listGcClasses } from '../host/gc/registry';
import { resultOnly, type RecordRun } from './loop-results';
import {
  PER_CLASS_ACTIVITIES,
  type GcClassInput,
  type GcClassListed,
  type GcClassResult,
  type GcClassRun,
  type PerClassActivity,
} from '../contracts/gc';

type ClassActivity = (input: GcClassInput) => Promise<GcClassResult>;

/** `record`: how a sweep's summary is kept (its loop's unit gives it what the summary adds to the metrics). */
export function createGcActivities(deps: HostDeps, record: RecordRun = resultOnly(deps, 'gc')) {
  const gc = { ...deps, log: deps.log.child({ loop: 'gc' }) };
  /** Runs one class; a name this worker does not know (a newer build's list) fails the class, not the sweep. */
  const runGcClass = async ({ cls, ...input }: GcClassRun): Promise<GcClassResult> => {
    const entry = gcClassNamed(cls);
    if (!entry) {
      const known = GC_CLASSES.map((c) => c.name).join(', ');
      throw ApplicationFailure.create({
        message: `unknown GC class "${cls}" (this worker has ${known})`,
        type: 'UnknownGcClass',
        nonRetryable: true,
      });
    }
    return entry.run(gc, input);
  };
  const perClass = Object.fromEntries(
    Object.entries(PER_CLASS_ACTIVITIES).map(([cls, activity]) => [activity, (input: GcClassInput) => runGcClass({ ...input, cls })]),
  ) as Record<PerClassActivity, ClassActivity>;
  return {
    ...perClass,
    gcClasses: async (): Promise<GcClassListed[]> => listGcClasses(),
    runGcClass,

    /** Stores the sweep's summary as the gc loop's last result (for `keeper status`) and counts its removals. */
    async recordGcSweep(summary: unknown): Promise<void> {
      await record(activityInfo().workflowExecution?.workflowId ?? '', summary);
    },
  };
}

/** What the workflows proxy (`proxyActivities<GcActivities>`): the types only. */
export type GcActivities = ReturnType<typeof createGcActivities>;
