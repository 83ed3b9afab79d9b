/**
 * The worker's own event-loop delay (perf_hooks.monitorEventLoopDelay). Everything a worker does waits on one event
 * loop: its activities' heartbeats, Docker's events, the looks, the run requests. Anything synchronous that waits (a
 * SQLite write meeting another writer's lock, before src/db/busy.ts) holds them all. The longest hold of each window
 * goes to keeper_event_loop_delay_max_seconds, and a hold of over a second is said at warn.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Logger } from '../log';
import type { KeeperMetrics } from '../metrics';

export const LOOP_DELAY_WINDOW_MS = 10_000;
export const LOOP_DELAY_WARN_MS = 1_000;

/** Watches until `stop`; each window's longest delay is told to the metrics, and over LOOP_DELAY_WARN_MS to the log. */
export function watchEventLoopDelay(log: Logger, metrics: KeeperMetrics | undefined, windowMs = LOOP_DELAY_WINDOW_MS): { stop(): void } {
  const histogram = monitorEventLoopDelay({ resolution: 20 });
  histogram.enable();
  metrics?.eventLoopDelayMax.set(0); // its series exists from the start
  const timer = setInterval(() => {
    const maxMs = histogram.max / 1e6;
    histogram.reset();
    metrics?.eventLoopDelayMax.set(maxMs / 1000);
    if (maxMs > LOOP_DELAY_WARN_MS) {
      log.warn("the worker's event loop was held: heartbeats, events and looks waited", { heldMs: Math.round(maxMs), windowMs });
    }
  }, windowMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      histogram.disable();
    },
  };
}
