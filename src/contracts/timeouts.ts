/**
 * How long the server waits for a silent activity. Every activity heartbeats while it runs (an interceptor in
 * the worker, src/activities/heartbeat.ts), so an activity whose worker was killed is retried this long after
 * its last heartbeat, not after a start-to-close timeout sized for the slowest sweep. The workflows set it on
 * their activities and the worker's interceptor beats at a fraction of it: a plain constant both import.
 */
export const HEARTBEAT_TIMEOUT_MS = 10_000;
