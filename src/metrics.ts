/**
 * keeper's own Prometheus metrics. They are created on the Temporal runtime's meter, so they are served on
 * the same --metrics-port endpoint as the SDK's runtime metrics. Tests and one-off commands use the no-op
 * meter.
 */
import type { Context } from '@temporalio/activity';
import { noopMetricMeter, type MetricMeter } from '@temporalio/common';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import type { StateDb } from './db/open';

export function createKeeperMetrics(meter: MetricMeter = noopMetricMeter) {
  return {
    crashes: meter.createCounter('keeper_crashes', 'crashes', 'crashes counted, by service'),
    circuitsOpen: meter.createGauge('keeper_circuits_open', 'int', 'circuits', 'services whose circuit is open'),
    gcRemovals: meter.createCounter('keeper_gc_removals', 'resources', 'resources removed by GC, by class'),
    poolReady: meter.createGauge('keeper_pool_ready', 'int', 'containers', 'ready warm-pool containers, by template'),
    tickDuration: meter.createHistogram('keeper_tick_duration', 'float', 's', 'wall time of one loop run, by loop'),
    dockerCalls: meter.createCounter('keeper_docker_api_calls', 'calls', 'Docker Engine API calls, by operation'),
  };
}

export type KeeperMetrics = ReturnType<typeof createKeeperMetrics>;

/**
 * Activity interceptor that turns loop results into metrics, so the loops themselves stay free of it: the time
 * from a run's first activity to its record activity is the loop's duration, the GC summary gives removals by
 * class, and open circuits are counted from the DB after each tick.
 */

const RECORDERS: Record<string, string> = { recordTickResult: 'reconcile', recordGcSweep: 'gc', recordPoolRefill: 'pool' };
const firstSeen = new Map<string, number>();

export function loopMetricsInterceptor(metrics: KeeperMetrics, db: StateDb) {
  return (ctx: Context): { inbound: ActivityInboundCallsInterceptor } => ({
    inbound: {
      async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
        const runId = ctx.info.workflowExecution?.runId ?? '';
        if (!firstSeen.has(runId)) firstSeen.set(runId, Date.now());
        const result = await next(input);
        const loop = RECORDERS[ctx.info.activityType];
        if (loop) {
          metrics.tickDuration.record((Date.now() - (firstSeen.get(runId) ?? Date.now())) / 1000, { loop });
          firstSeen.delete(runId);
          if (loop === 'gc') recordGcRemovals(metrics, input.args[0]);
          if (loop === 'reconcile') {
            metrics.circuitsOpen.set(db.prepare('SELECT COUNT(*) FROM services WHERE circuit_open = 1').pluck().get() as number);
          }
        }
        if (firstSeen.size > 1000) firstSeen.clear(); // runs that never reached their record step
        return result;
      },
    },
  });
}

function recordGcRemovals(metrics: KeeperMetrics, summary: unknown): void {
  const classes = (summary as { summary?: { class: string; removed: number }[] })?.summary ?? [];
  for (const c of classes) if (c.removed > 0) metrics.gcRemovals.add(c.removed, { class: c.class });
}
