/**
 * `keeper status`: one look at this host from its state DB and engine, with no Temporal needed. Services with
 * their crash and circuit state and their last recorded death, databases and environments, the pool, disk usage,
 * the event watcher, alerts and how their deliveries ended, and each loop's last result (raw: the CLI words it,
 * `--json` prints it as stored).
 */
import { reportedConditions } from '../db/conditions';
import { lastDeaths } from '../db/crash-records';
import { readEventWatcherState } from '../db/events';
import { readLookStates } from '../db/look-states';
import { lastLoopResults } from '../db/loop-results';
import { readRequestFailures } from '../db/request-failures';
import { countsByStatus, serviceStatuses } from '../db/status';
import { readWorkerConfig } from '../db/worker-config';
import { unixSeconds } from '../time';
import type { HostDeps } from './deps';
import { readDiskGuard } from './disk';
import { readEngineReport } from './health';
import { notificationStatus } from './notifications';
import { servicesCountedByOthers } from './other-writer';
import { poolStats } from './pool/admin';
import { tenantRuntimeStatus } from './tenant-runtime';

/**
 * The tenant runtime and the webhooks are the worker's, as it recorded them at its start (keeper_worker_config):
 * this command's own flags say nothing of what the worker does. Without a record, they are this command's.
 *
 * The engine is asked three things at once (its identity, its runtimes, its root dir), so that an engine that does
 * not answer costs one deadline, not three in turn, and the rest, read from the state DB, is shown whatever it does.
 */
export async function readStatus(deps: Pick<HostDeps, 'db' | 'docker' | 'settings' | 'clock'>) {
  const { db, settings } = deps;
  const now = unixSeconds(deps.clock);
  const worker = readWorkerConfig(db, settings.hostId);
  const asWorker = worker ? { ...deps, settings: { ...settings, tenantRuntime: worker.config.tenantRuntime } } : deps;
  const workerAlerts = worker ? { webhooks: worker.config.webhooks, signed: worker.config.signed } : {};
  const [engine, tenantRuntime, disk] = await Promise.all([readEngineReport(deps), tenantRuntimeStatus(asWorker), readDiskGuard(deps)]);
  return {
    host: settings.hostId,
    now,
    worker,
    /** Whether the engine answers, and what it is. */
    engine,
    services: servicesWithLastCrash(db, now, settings.crashWindowMs / 1000),
    /** Bad keeper.* crash policy labels, one line each, as the reconciler last reported them. */
    crashPolicyLabels: reportedConditions(db, settings.hostId, 'reconcile')
      .filter((c) => c.subject.startsWith('labels:'))
      .map((c) => c.message),
    databases: countsByStatus(db, 'databases'),
    environments: countsByStatus(db, 'environments'),
    pool: poolStats(db, settings),
    tenantRuntime,
    disk,
    loops: lastLoopResults(db),
    events: describeWatcher(readEventWatcherState(db, settings.hostId)),
    /** How the worker's local looks last went, one per loop (none before a worker with looks has run here). */
    looks: readLookStates(db, settings.hostId),
    /** The worker's run requests that Temporal has not taken, one per loop, with since when and why (none: all taken). */
    requests: readRequestFailures(db, settings.hostId),
    notifications: { ...notificationStatus(deps), ...workerAlerts },
    otherWriter: servicesCountedByOthers(deps),
  };
}

export type HostStatus = Awaited<ReturnType<typeof readStatus>>;

/** Each service's row, with its newest keeper_crash_records entry (null when none is kept). */
function servicesWithLastCrash(db: HostDeps['db'], now: number, windowSeconds: number) {
  const deaths = lastDeaths(db);
  return serviceStatuses(db, now, windowSeconds).map((s) => ({ ...s, lastCrash: deaths.get(s.id) ?? null }));
}

/** What the event watcher is doing, in an operator's words; the worker's local looks see every change whatever it says. */
function describeWatcher(w: { state: string; lastError: string; stateSince: number } | undefined) {
  if (!w) return { state: 'not started', detail: 'no worker has run on this host yet' };
  const detail =
    w.state === 'following'
      ? 'crashes are seen within about a second'
      : w.state === 'stopped'
        ? 'the worker is stopped'
        : w.state === 'silent'
          ? `the stream is open but silent: the worker's looks see crashes within seconds; reopened every 30 s (${w.lastError})`
          : `the worker's looks see crashes within seconds (${w.lastError || 'no error recorded'})`;
  return { state: w.state, since: w.stateSince, detail };
}
