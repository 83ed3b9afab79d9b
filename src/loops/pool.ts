/**
 * The pool loop: keeps warm containers ready for claims (src/workflows/poolRefill.ts, src/activities/pool.ts,
 * src/host/pool/). Its schedule's refill is a backstop; its look, claims and the end of an image's background pull
 * request the others.
 */
import type { PoolRefillResult } from '../contracts/pool';
import { createPoolActivities } from '../activities/pool';
import { readyByTemplate } from '../db/pool';
import { lookForPool } from '../host/pool/look';
import { refillWords } from '../policy/run-words';
import { requestPoolRefill } from '../temporal/operations';
import { loopUnit } from './unit';

export const poolLoop = loopUnit<'pool', ReturnType<typeof createPoolActivities>, PoolRefillResult>({
  name: 'pool',
  schedule: { workflowType: 'poolRefill', every: 'poolIntervalMs' },
  activities: (deps, record) =>
    createPoolActivities(deps, { record, requestRefill: (client) => requestPoolRefill(client, deps.settings.hostId) }),
  look: { every: 'poolLookIntervalMs', find: (deps, view) => lookForPool(deps, view) },
  // Its schedule is a 6-hour backstop: a starting worker fills its pool now.
  runAtStart: true,
  settings: ['poolIntervalMs', 'poolLookIntervalMs', 'poolSize', 'poolMaxTotal', 'pooledTemplates'],
  // The ready containers per template.
  metrics: (metrics, db) => {
    for (const t of readyByTemplate(db)) metrics.poolReady.set(t.ready, { template: t.id });
  },
  words: (result) => refillWords(result as PoolRefillResult),
});
