/** The gcSweep workflow's activities: one per resource class, and the record of the sweep's summary. */
import { activityInfo } from '@temporalio/activity';
import type { HostDeps } from '../host/deps';
import {
  removeBuildImages,
  removeDanglingImages,
  removeEmptyTenantNetworks,
  removeExpiredSnapshots,
  removeOldBuildDirs,
  removeOldCrashRecords,
  removeOrphanContainers,
  removeOrphanVolumes,
} from '../host/gc/classes';
import type { GcClassInput, GcClassResult } from '../contracts/gc';
import { recordLoopRun } from './loop-results';

export function createGcActivities(deps: HostDeps) {
  const gc = { ...deps, log: deps.log.child({ loop: 'gc' }) };
  return {
    removeOrphanContainers: (input: GcClassInput): Promise<GcClassResult> => removeOrphanContainers(gc, input),
    removeOrphanVolumes: (input: GcClassInput): Promise<GcClassResult> => removeOrphanVolumes(gc, input),
    removeEmptyTenantNetworks: (input: GcClassInput): Promise<GcClassResult> => removeEmptyTenantNetworks(gc, input),
    removeDanglingImages: (input: GcClassInput): Promise<GcClassResult> => removeDanglingImages(gc, input),
    removeBuildImages: (input: GcClassInput): Promise<GcClassResult> => removeBuildImages(gc, input),
    removeOldBuildDirs: (input: GcClassInput): Promise<GcClassResult> => removeOldBuildDirs(gc, input),
    removeExpiredSnapshots: (input: GcClassInput): Promise<GcClassResult> => removeExpiredSnapshots(gc, input),
    removeOldCrashRecords: (input: GcClassInput): Promise<GcClassResult> => removeOldCrashRecords(gc, input),

    /** Stores the sweep's summary as the gc loop's last result (for `keeper status`) and counts its removals. */
    async recordGcSweep(summary: unknown): Promise<void> {
      recordLoopRun(deps, 'gc', activityInfo().workflowExecution?.workflowId ?? '', summary);
    },
  };
}
