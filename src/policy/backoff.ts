/**
 * Exponential backoff, pure: how long keeper waits before its next try after failures in a row, where keeper
 * times a retry itself (a failed image pull; the Docker event stream's reconnect). Retries that Temporal runs
 * (activities, webhook deliveries) follow their workflow's retry policy instead.
 */

/**
 * The wait after `failures` failures in a row: `first` after one (or none), doubled per further failure, never
 * more than `max`. In whatever unit `first` and `max` are given (ms, seconds).
 */
export function exponentialBackoff(failures: number, first: number, max: number): number {
  // Past 52 doublings every wait is over any cap, and 2 ** 1024 would be Infinity (0 × Infinity is NaN).
  const doublings = Math.min(Math.max(0, failures - 1), 52);
  return Math.min(max, first * 2 ** doublings);
}
