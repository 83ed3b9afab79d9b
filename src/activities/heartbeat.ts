/**
 * Every activity heartbeats while it runs, from an interceptor, so the activities themselves stay plain. With
 * the workflows' heartbeat timeouts this makes a worker killed mid-activity visible to the server in seconds:
 * its heartbeats stop, the activity times out and is retried elsewhere, instead of waiting out a
 * start-to-close timeout sized for the slowest sweep. A hung engine call is still bounded by start-to-close.
 */
import type { Context } from '@temporalio/activity';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { HEARTBEAT_TIMEOUT_MS } from '../contracts/timeouts';

/** How often a running activity heartbeats: a fifth of the workflows' heartbeat timeout, so a late beat is no timeout. */
export const HEARTBEAT_INTERVAL_MS = HEARTBEAT_TIMEOUT_MS / 5;

export function heartbeatInterceptor(intervalMs = HEARTBEAT_INTERVAL_MS) {
  return (ctx: Context): { inbound: ActivityInboundCallsInterceptor } => ({
    inbound: {
      async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
        const beat = setInterval(() => ctx.heartbeat(), intervalMs);
        try {
          return await next(input);
        } finally {
          clearInterval(beat);
        }
      },
    },
  });
}
