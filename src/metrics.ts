/**
 * keeper's own Prometheus metrics: what happens on the host (crashes, circuits, GC removals, the pool, Docker
 * calls, the event watcher, the disk guard). How the loops run (runs, failures, latency) is the SDK's: its
 * runtime exports `temporal_workflow_completed_total`, `temporal_workflow_failed_total` and
 * `temporal_workflow_endtoend_latency` by workflow_type, and the activity metrics by activity_type.
 *
 * They are created on the Temporal runtime's meter, so they are served on the same --metrics-port endpoint
 * and carry its `keeper_host` global tag. Tests and one-off commands use the no-op meter.
 */
import { noopMetricMeter, type MetricMeter } from '@temporalio/common';
import type { WatcherState } from './db/events';
import type { DiskVerdict } from './contracts/disk';

export function createKeeperMetrics(meter: MetricMeter = noopMetricMeter) {
  return {
    crashes: meter.createCounter('keeper_crashes', 'crashes', 'crashes counted, by service'),
    circuitsOpen: meter.createGauge('keeper_circuits_open', 'int', 'circuits', 'services whose circuit is open'),
    gcRemovals: meter.createCounter('keeper_gc_removals', 'resources', 'resources removed by GC, by class'),
    poolReady: meter.createGauge('keeper_pool_ready', 'int', 'containers', 'ready warm-pool containers, by template'),
    dockerCalls: meter.createCounter('keeper_docker_api_calls', 'calls', 'Docker Engine API calls, by operation'),
    eventWatcherState: meter.createGauge(
      'keeper_event_watcher_state',
      'int',
      '',
      "the Docker event watcher's state: 1 for the current one (following, silent, reconnecting, unavailable, stopped), 0 for the others",
    ),
    diskUsedRatio: meter.createGauge(
      'keeper_disk_used_ratio',
      'float',
      '',
      "used fraction (0-1) of a guarded path at the disk guard's last check, by path and role",
    ),
    eventLoopDelayMax: meter.createGauge(
      'keeper_event_loop_delay_max_seconds',
      'float',
      '',
      "the longest the worker's event loop was held in the last 10 s (heartbeats, Docker's events and the looks all wait while it is)",
    ),
    diskWarnRatio: meter.createGauge('keeper_disk_warn_ratio', 'float', '', '--disk-warn as a fraction (0-1)'),
    diskBlockRatio: meter.createGauge(
      'keeper_disk_block_ratio',
      'float',
      '',
      '--disk-block as a fraction (0-1): at or above it the guard blocks pool refills and deploys',
    ),
    lookFailing: meter.createGauge(
      'keeper_look_failing',
      'int',
      '',
      "1 while a loop's local look fails (its last look failed, or did not finish within its deadline: a wedged engine), 0 while it works, by loop; keeper status says why and since when",
    ),
    looks: meter.createCounter(
      'keeper_looks',
      'looks',
      "the worker's local looks, by loop and whether one found something to do (found: yes, which requests a run, or no)",
    ),
    runRequests: meter.createCounter(
      'keeper_run_requests',
      'requests',
      'attempts to request a loop run (from the event watcher and the local looks), by loop and outcome: taken, declined (paused), retried (Temporal did not take it; kept and sent again), or refused (Temporal refused it for good, e.g. its schedule is gone: kept, sent again every minute, and shown by keeper status)',
    ),
    notifications: meter.createCounter(
      'keeper_notifications',
      'deliveries',
      'alert deliveries to webhooks that ended, by kind and outcome (delivered, failed: refused or given up)',
    ),
  };
}

export type KeeperMetrics = ReturnType<typeof createKeeperMetrics>;

const WATCHER_STATES: WatcherState[] = ['following', 'silent', 'reconnecting', 'unavailable', 'stopped'];

/** One series per state, so that an alert can ask for `{state="unavailable"} == 1` and a graph shows changes. */
export function recordWatcherState(metrics: KeeperMetrics, state: WatcherState): void {
  for (const s of WATCHER_STATES) metrics.eventWatcherState.set(s === state ? 1 : 0, { state: s });
}

/**
 * The guard's measurements and its thresholds, so that the alerts compare with the thresholds keeper enforces
 * (not copies of them). A path that could not be measured has no ratio: its series keeps its last value.
 */
export function recordDiskVerdict(metrics: KeeperMetrics, verdict: DiskVerdict): void {
  metrics.diskWarnRatio.set(verdict.warnAt / 100);
  metrics.diskBlockRatio.set(verdict.blockAt / 100);
  for (const p of verdict.paths) {
    if (p.totalBytes === null || p.freeBytes === null || p.totalBytes <= 0) continue;
    metrics.diskUsedRatio.set((p.totalBytes - p.freeBytes) / p.totalBytes, { path: p.path, role: p.role });
  }
}

/** An alert's deliveries that ended, by kind and outcome. */
export function recordDeliveries(metrics: KeeperMetrics, kind: string, ends: { delivered: boolean }[]): void {
  for (const e of ends) metrics.notifications.add(1, { kind, outcome: e.delivered ? 'delivered' : 'failed' });
}
