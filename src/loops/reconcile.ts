/**
 * The reconcile loop: counts crashes, opens and hands over circuits, and keeps ah's rows true to the engine (ticks:
 * src/workflows/reconcileTick.ts and reconcileOnEvents.ts, src/activities/reconcile.ts, src/host/reconcile/). Its
 * schedule's tick is a backstop; most ticks are requested by the event watcher and its look, as reconcileOnEvents
 * runs (one signal-with-start per request, so a burst is one run).
 */
import type { TickSummary } from '../contracts/reconcile';
import { createReconcileActivities } from '../activities/reconcile';
import { countOpenCircuits } from '../db/services';
import { lookForReconcile } from '../host/reconcile/look';
import { crashPolicy } from '../policy/deaths/decision';
import { tickWords } from '../policy/run-words';
import { requestReconcile } from '../temporal/operations';
import { loopUnit } from './unit';

export const reconcileLoop = loopUnit<'reconcile', ReturnType<typeof createReconcileActivities>, TickSummary>({
  name: 'reconcile',
  schedule: { workflowType: 'reconcileTick', every: 'reconcileIntervalMs' },
  otherRuns: { events: 'reconcileOnEvents' },
  request: (client, hostId, why, serviceId) => requestReconcile(client, hostId, serviceId, why),
  activities: (deps, record) => createReconcileActivities(deps, record),
  look: { every: 'reconcileLookIntervalMs', find: (deps, view) => lookForReconcile(deps, crashPolicy(deps.settings), view) },
  settings: [
    'reconcileIntervalMs',
    'reconcileLookIntervalMs',
    'eventDebounceMs',
    'crashWindowMs',
    'crashThreshold',
    'circuitBackoffMs',
    'recovery',
    'escalationDecayMs',
    'engineStopGraceMs',
    'staleDeployAfterMs',
    'staleEnvCreateAfterMs',
  ],
  // The open circuits, counted from the DB: a tick opens and recovers them, and so do their workflows.
  metrics: (metrics, db) => metrics.circuitsOpen.set(countOpenCircuits(db)),
  words: tickWords,
});
