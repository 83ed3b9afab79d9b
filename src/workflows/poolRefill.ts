/**
 * One refill of this host's warm pool, started by the `pool` schedule (and after each claim). Deterministic:
 * the entry ids come from the workflow's seeded uuid4, so a retried activity always names the same entry.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  uuid4,
} from '@temporalio/workflow';
import type { LocalActivityOptions } from '@temporalio/common';
import type { PoolActivities } from '../activities/pool';
import type { PoolEntryResult, PoolRefillResult } from '../contracts/pool';
import { HEARTBEAT_TIMEOUT_MS } from '../contracts/timeouts';
import { refillWords } from '../policy/run-words';
import { refillActed } from '../policy/tick-summary';
import { DETACH_CLAIMED_PATCH, LOCAL_LOOPS_PATCH } from './patches';

const STEP = { startToCloseTimeout: '1m', scheduleToCloseTimeout: '3m', retry: { maximumAttempts: 3, initialInterval: '1s' } } as const;
const CREATE: LocalActivityOptions = {
  startToCloseTimeout: '2m',
  scheduleToCloseTimeout: '5m',
  retry: { maximumAttempts: 3, initialInterval: '1s', nonRetryableErrorTypes: ['TemplateNotFound', 'ImageMissing', 'NameTaken'] },
};

/** The refill's steps as remote activities (runs started before the local-activities patch replay these)… */
const remote = refillSteps(
  proxyActivities<PoolActivities>({ heartbeatTimeout: HEARTBEAT_TIMEOUT_MS, ...STEP }),
  proxyActivities<PoolActivities>({ heartbeatTimeout: HEARTBEAT_TIMEOUT_MS, ...CREATE }),
);
/** …or as local ones: a refill with nothing to create is one workflow task. */
const local = refillSteps(proxyLocalActivities<PoolActivities>(STEP), proxyLocalActivities<PoolActivities>(CREATE));

/** The steps by name (activity proxies resolve names on access: they cannot be spread). */
function refillSteps(step: PoolActivities, create: PoolActivities) {
  const { detachClaimedFromPool, prunePoolGhosts, checkDiskSpace, planPoolRefill, recordPoolRefill } = step;
  return {
    detachClaimedFromPool,
    prunePoolGhosts,
    checkDiskSpace,
    planPoolRefill,
    recordPoolRefill,
    createPoolEntry: create.createPoolEntry,
  };
}

function failureMessage(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure || cause instanceof Error) return cause.message;
  return String(cause);
}

export async function poolRefill(): Promise<PoolRefillResult> {
  const isLocal = patched(LOCAL_LOOPS_PATCH);
  const { detachClaimedFromPool, prunePoolGhosts, checkDiskSpace, planPoolRefill, recordPoolRefill, createPoolEntry } = isLocal
    ? local
    : remote;
  // Patched: a run that started on a worker without this step replays without it.
  const detach = patched(DETACH_CLAIMED_PATCH) ? await detachClaimedFromPool() : undefined;
  const prune = await prunePoolGhosts();
  const verdict = await checkDiskSpace();
  const disk = { level: verdict.level, message: verdict.message, flaggedPaths: verdict.flaggedPaths };
  const result: PoolRefillResult = { detach, prune, disk, blocked: false, plan: null, created: [], failed: [], ready: {} };

  if (verdict.level === 'block') {
    result.blocked = true;
    result.error = `pool refill blocked by the disk guard: ${verdict.message}`;
  } else {
    const plan = await planPoolRefill();
    result.plan = plan;
    const entries = plan.steps.flatMap((s) =>
      Array.from({ length: s.count }, () => ({ templateId: s.templateId, entryId: `wp_${uuid4().replace(/-/g, '').slice(0, 20)}` })),
    );
    const outcomes = await Promise.allSettled(entries.map((e) => createPoolEntry(e)));
    outcomes.forEach((o, i) => {
      if (o.status === 'fulfilled') result.created.push(o.value as PoolEntryResult);
      else result.failed.push({ ...entries[i], error: failureMessage(o.reason) });
    });
    result.ready = { ...plan.ready };
    for (const c of result.created) if (c.outcome === 'created') result.ready[c.templateId] = (result.ready[c.templateId] ?? 0) + 1;
    if (result.failed.length > 0) result.error = `${result.failed.length} pool container(s) not created: ${result.failed[0].error}`;
  }
  await recordPoolRefill(result);
  if (isLocal && refillActed(result)) setCurrentDetails(refillWords(result));
  return result;
}
