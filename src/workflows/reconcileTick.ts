/**
 * One reconcile tick, started by this host's `reconcile` schedule: DB-only housekeeping, then observe, then act,
 * then one circuit breaker workflow per circuit that opened or expired. Returns (and records) a compact summary.
 * Every step is an idempotent activity; the history has a fixed number of events plus one per circuit started.
 */
import { patched, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { ReconcileActivities } from '../activities/reconcile';
import type { TickSummary } from '../contracts/reconcile';
import { HEARTBEAT_TIMEOUT_MS } from '../contracts/timeouts';
import { summariseTick, uniqueByService } from '../policy/tick-summary';
import { LOCAL_LOOPS_PATCH } from './patches';
import { passWhileRequested, startCircuitBreaker } from './reconcile-passes';

const { housekeep, observeHost, applyObservation, recordTickResult } = proxyActivities<ReconcileActivities>({
  heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
  startToCloseTimeout: '2m',
  scheduleToCloseTimeout: '5m',
  retry: { initialInterval: '1s', maximumAttempts: 5 },
});

/**
 * Schedule-started runs are one pass of local activities (reconcile-passes.ts). The host's event runs were runs of
 * this type too until reconcileOnEvents: one still in flight after an upgrade keeps taking the watcher's signals.
 */
export async function reconcileTick(): Promise<TickSummary> {
  // Patched: a tick that started on a worker with remote activities replays with them.
  if (patched(LOCAL_LOOPS_PATCH)) return passWhileRequested();
  const housekept = await housekeep();
  const obs = await observeHost();
  const applied = await applyObservation(obs);
  const circuits = uniqueByService([...applied.opened, ...housekept.expiredCircuits]);
  for (const c of circuits) await startCircuitBreaker(housekept.hostId, c);
  const { expiredCircuits, hostId: _host, ...housekeeping } = housekept;
  const summary = summariseTick(obs, applied, housekeeping, expiredCircuits.length);
  await recordTickResult(summary, workflowInfo().workflowId);
  return summary;
}
