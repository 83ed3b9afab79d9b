/**
 * The gc loop: sweeps what ah and keeper left behind, class by class (src/host/gc/registry.ts), with every age and
 * ownership guard (src/workflows/gcSweep.ts, src/activities/gc.ts, src/host/gc/). Its schedule's sweep is a
 * backstop; its look and the disk watcher request the others. Its first sweep and first look wait
 * --gc-first-delay, so that a restarted host settles before anything is removed.
 */
import type { GcSweepResult } from '../contracts/gc';
import { createGcActivities } from '../activities/gc';
import { lookForGc } from '../host/gc/look';
import { gcWords } from '../policy/run-words';
import { loopUnit } from './unit';

export const gcLoop = loopUnit<'gc', ReturnType<typeof createGcActivities>, GcSweepResult>({
  name: 'gc',
  schedule: { workflowType: 'gcSweep', every: 'gcIntervalMs', firstDelay: 'gcFirstDelayMs' },
  activities: (deps, record) => createGcActivities(deps, record),
  look: { every: 'gcLookIntervalMs', firstDelay: 'gcFirstDelayMs', find: (deps, view) => lookForGc(deps, view) },
  settings: [
    'gcIntervalMs',
    'gcLookIntervalMs',
    'gcFirstDelayMs',
    'gcMinAgeMs',
    'buildDir',
    'buildDirMaxAgeMs',
    'buildImagesPerService',
    'snapshotMaxPerService',
    'snapshotMaxAgeMs',
    'crashRecordMaxPerService',
    'crashRecordMaxAgeMs',
  ],
  // Its removals by class: every class the sweep ran, 0 included, so each class's series exists from the first sweep.
  metrics: (metrics, _db, result) => {
    for (const c of result.summary ?? []) metrics.gcRemovals.add(c.removed, { class: c.class });
  },
  words: gcWords,
});
