/**
 * The reconcile tick's activities: housekeep (DB only), observe, apply, record. Each is idempotent, so any of
 * them can be retried harmlessly; each returns a compact result.
 */
import { whenWritable } from '../db/busy';
import { unheldCircuits } from '../db/circuit-holds';
import type { HostDeps } from '../host/deps';
import { handOverCircuits } from '../host/circuit';
import { applyObservation } from '../host/reconcile/apply';
import { housekeep } from '../host/reconcile/housekeep';
import { observeHost } from '../host/reconcile/observe';
import { reportConditions } from '../host/conditions';
import { crashPolicy } from '../policy/deaths/decision';
import { labelConditions } from '../policy/service-crash-policy';
import { unixSeconds } from '../time';
import { summariseTick, tickActed, uniqueByService } from '../policy/tick-summary';
import { tickWords } from '../policy/run-words';
import { resultOnly, type RecordRun } from './loop-results';
import type { Housekeeping, ReconciledHost, TickApplied, TickObservation, TickSummary } from '../contracts/reconcile';

/** `record`: how a tick's summary is kept (its loop's unit gives it what the summary adds to the metrics). */
export function createReconcileActivities(deps: HostDeps, record: RecordRun = resultOnly(deps, 'reconcile')) {
  const log = deps.log.child({ loop: 'reconcile' });
  const policy = crashPolicy(deps.settings);
  const observe = async (): Promise<TickObservation> => {
    const obs = await observeHost(deps, policy, unixSeconds(deps.clock));
    if (obs.dockerError) log.warn('docker unreachable: only DB steps ran, nothing counted', { error: obs.dockerError });
    if (obs.transientErrors)
      log.warn('transient docker errors: those containers were skipped', { count: obs.transientErrors, first: obs.transientSamples });
    // Bad crash policy labels: logged once per change, kept for keeper status.
    const labels = labelConditions(obs.labelProblems ?? [], obs.labelsChecked ?? []);
    await whenWritable('the crash policy labels reported', () =>
      reportConditions({ ...deps, log }, 'reconcile', labels.found, labels.unchecked),
    );
    return obs;
  };
  return {
    async housekeep(): Promise<Housekeeping> {
      return whenWritable('housekeeping', () => housekeep(deps, policy));
    },

    observeHost: observe,

    async reconcileHost(workflowId: string): Promise<ReconciledHost> {
      const observedFromMs = deps.clock.nowMs();
      // The DB-only steps are compare-and-set writes that a second run finds done: safe to run again for the lock.
      const housekept = await whenWritable('housekeeping', () => housekeep(deps, policy));
      const obs = await observe();
      const applied = await applyObservation({ ...deps, log }, policy, obs);
      // And every open circuit whose workflow has not taken hold of it: a worker killed between the opening and
      // the start of its workflow, a server down at that moment, however long ago; a circuit ah opened; or one that
      // opened again while the workflow of an older opening still runs. Each is numbered (taken over if need be).
      const wanted = uniqueByService([...applied.opened, ...housekept.expiredCircuits, ...unheldCircuits(deps.db)]);
      const circuits = handOverCircuits(deps, wanted);
      const { expiredCircuits, hostId, ...housekeeping } = housekept;
      const summary = summariseTick(obs, applied, housekeeping, expiredCircuits.length);
      await record(workflowId, summary);
      deps.hints?.notePass({ observedFromMs, finishedAtMs: deps.clock.nowMs() });
      const services = [...new Set([...obs.crashes.map((c) => c.serviceId), ...circuits.map((c) => c.serviceId)])];
      return { hostId, circuits, summary, services, details: tickActed(summary) ? tickWords(summary) : undefined };
    },

    async applyObservation(obs: TickObservation): Promise<TickApplied> {
      return applyObservation({ ...deps, log }, policy, obs);
    },

    async recordTickResult(summary: TickSummary, workflowId: string): Promise<void> {
      await record(workflowId, summary);
    },
  };
}

/** What the workflows proxy (`proxyActivities<ReconcileActivities>`): the types only. */
export type ReconcileActivities = ReturnType<typeof createReconcileActivities>;
