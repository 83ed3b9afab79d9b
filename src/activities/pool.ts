/**
 * The poolRefill workflow's activities. The plan starts the background pull of a pooled template's absent image,
 * which requests a refill through the worker's client when it ends (and when a failed one may be tried again). A
 * pool entry that cannot be made by retrying (its template is gone, its image is not on the engine, its name is
 * taken) fails as non-retryable, typed by its reason, so the workflow reports it once instead of retrying. A missing image is normally found by the plan, which leaves the template
 * out and reports it as a condition of the refill (logged once, by recordPoolRefill); one removed between the
 * plan and the create is BENIGN, so the SDK logs it at debug, not as a warning with a task token.
 */
import { activityInfo, Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { whenWritable } from '../db/busy';
import { reportConditions } from '../host/conditions';
import type { HostDeps } from '../host/deps';
import { poolDiskVerdict } from '../host/disk';
import { createPoolEntry, detachClaimedFromPool, planPoolRefill, PoolEntryRefused, prunePoolGhosts } from '../host/pool/refill';
import type { DiskVerdict } from '../contracts/disk';
import type { PoolEntryRequest, PoolEntryResult, PoolRefillResult } from '../contracts/pool';
import { ImagePulls } from '../host/pool/pull';
import { refillConditions, refillUnchecked } from '../policy/conditions';
import { resultOnly, type RecordRun } from './loop-results';

/**
 * Requests a refill of this host's pool schedule through `client`, and says what happened; the pool loop's unit
 * (src/loops/pool.ts) wires it to the schedules (an activity reaches no schedule itself).
 */
export type PoolRefillRequester = (client: Client) => Promise<string>;

/**
 * `requestRefill`: how a background pull requests a refill (none: it requests none); `record`: how a refill's result
 * is kept (its loop's unit gives both).
 */
export function createPoolActivities(deps: HostDeps, hooks: { requestRefill?: PoolRefillRequester; record?: RecordRun } = {}) {
  const { requestRefill } = hooks;
  const record = hooks.record ?? resultOnly(deps, 'pool');
  // The worker's client, from the last plan: a pull outlives the activity that started it.
  let client: Client | undefined;
  const pulls = new ImagePulls(deps, async (why) => {
    const refill = client && requestRefill ? await requestRefill(client) : 'not requested: this host requests no refills';
    deps.log.info(`${why}: refill ${refill}`, { loop: 'pool' });
  });
  return {
    prunePoolGhosts: () => prunePoolGhosts(deps),
    detachClaimedFromPool: () => detachClaimedFromPool(deps),
    async planPoolRefill() {
      client = Context.current().client;
      return planPoolRefill(deps, pulls);
    },
    /**
     * The disk guard's verdict for this host, as the pool refill reads it: a block held by disk pressure stays a
     * block until every path is under the warning threshold.
     */
    checkDiskSpace: (): Promise<DiskVerdict> => poolDiskVerdict(deps),

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
     * Stores the refill's result as the pool loop's last result (for `keeper status` and `keeper pool status`, and
     * the metrics) and logs its conditions once (a missing image, the disk guard), not every refill.
     */
    async recordPoolRefill(result: PoolRefillResult): Promise<void> {
      await record(activityInfo().workflowExecution?.workflowId ?? '', result);
      await whenWritable('the pool conditions reported', () =>
        reportConditions(deps, 'pool', refillConditions(result), refillUnchecked(result)),
      );
    },
  };
}

/** What the workflows proxy (`proxyActivities<PoolActivities>`): the types only. */
export type PoolActivities = ReturnType<typeof createPoolActivities>;
