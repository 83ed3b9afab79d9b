/**
 * keeper's own Prometheus metrics. They are created on the Temporal runtime's meter, so they are served on
 * the same --metrics-port endpoint as the SDK's runtime metrics. Tests and one-off commands use the no-op
 * meter.
 */
import { noopMetricMeter, type MetricMeter } from '@temporalio/common';

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
