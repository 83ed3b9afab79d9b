/**
 * The poolRefill workflow's activities. A pool entry that cannot be made by retrying (its template is gone, its
 * image is not on the engine, its name is taken) fails as non-retryable, typed by its reason, so the workflow
 * reports it once instead of retrying. A missing image is normally found by the plan, which leaves the template
 * out and reports it as a condition of the refill (logged once, by recordPoolRefill); one removed between the
 * plan and the create is BENIGN, so the SDK logs it at debug, not as a warning with a task token.
 */
import { activityInfo } from '@temporalio/activity';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { recordLoopResult } from '../db/loop-results';
import { reportConditions } from '../host/conditions';
import { recordDiskVerdict } from '../metrics';
import type { HostDeps } from '../host/deps';
import { readDiskGuard } from '../host/disk';
import { poolStats } from '../host/pool/admin';
import { createPoolEntry, detachClaimedFromPool, planPoolRefill, PoolEntryRefused, prunePoolGhosts } from '../host/pool/refill';
import type { DiskVerdict } from '../contracts/disk';
import type { PoolEntryRequest, PoolEntryResult, PoolRefillResult } from '../contracts/pool';
import { refillConditions, refillUnchecked } from '../policy/conditions';
import { unixSeconds } from '../time';

export function createPoolActivities(deps: HostDeps) {
  return {
    prunePoolGhosts: () => prunePoolGhosts(deps),
    detachClaimedFromPool: () => detachClaimedFromPool(deps),
    planPoolRefill: async () => planPoolRefill(deps),
    /** The disk guard's verdict for this host, as the pool refill reads it; the disk metrics follow it. */
    async checkDiskSpace(): Promise<DiskVerdict> {
      const verdict = await readDiskGuard(deps);
      if (deps.metrics) recordDiskVerdict(deps.metrics, verdict);
      return verdict;
    },

    async createPoolEntry(req: PoolEntryRequest): Promise<PoolEntryResult> {
      try {
        return await createPoolEntry(deps, req);
      } catch (err) {
        if (!(err instanceof PoolEntryRefused)) throw err;
        const category = err.reason === 'ImageMissing' ? ApplicationFailureCategory.BENIGN : undefined;
        throw ApplicationFailure.create({ message: err.message, type: err.reason, nonRetryable: true, category });
      }
    },

    /**
     * Stores the refill's result as the pool loop's last result (for `keeper status` and `keeper pool status`)
     * and logs its conditions once (a missing image, the disk guard), not every refill.
     */
    async recordPoolRefill(result: PoolRefillResult): Promise<void> {
      const workflowId = activityInfo().workflowExecution?.workflowId ?? '';
      recordLoopResult(deps.db, { loop: 'pool', hostId: deps.settings.hostId, workflowId, finishedAt: unixSeconds(deps.clock), result });
      reportConditions(deps, 'pool', refillConditions(result), refillUnchecked(result));
      if (deps.metrics) for (const t of poolStats(deps.db, deps.settings).templates) deps.metrics.poolReady.set(t.ready, { template: t.id });
    },
  };
}
