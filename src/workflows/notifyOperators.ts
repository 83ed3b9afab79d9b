/**
 * One alert (a circuit opened, closed, or its recovery failed) delivered to every webhook of this host, each on
 * its own: a receiver that is down does not hold up the others, and one that got it is not sent it again.
 * Durable: Temporal retries each delivery with backoff (1 s doubling to 1 min) for --notify-retry-for, across
 * worker and server restarts. Every attempt carries the event's idempotency key, so a receiver that got an
 * attempt whose answer was lost drops the repeat. A receiver that refuses it (4xx) is not retried. How each
 * delivery ended is recorded for `keeper status`. Started by the circuit breaker workflow (parent-close ABANDON).
 */
import { ActivityFailure, ApplicationFailure, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import type { NotifyActivities } from '../activities/notify';
import type { DeliveryEnd, NotificationEvent, NotifyResult } from '../contracts/notification';
import { HEARTBEAT_TIMEOUT_MS } from '../contracts/timeouts';
import { notificationKey } from '../policy/notification';

const { planNotification, recordNotifications } = proxyActivities<NotifyActivities>({
  heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '1m' },
});

export async function notifyOperators(event: NotificationEvent): Promise<NotifyResult> {
  const plan = await planNotification();
  const { deliverNotification } = proxyActivities<NotifyActivities>({
    heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
    startToCloseTimeout: '30s', // one request times out after 10 s
    scheduleToCloseTimeout: plan.retryForMs,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
  });
  const ends = await Promise.all(
    plan.targets.map(async (target): Promise<DeliveryEnd> => {
      try {
        return { target, delivered: true, attempts: (await deliverNotification(target.id, event)).attempt };
      } catch (err) {
        return { target, delivered: false, ...failureOf(err, plan.retryForMs) };
      }
    }),
  );
  if (ends.length > 0) await recordNotifications(event, ends);
  const delivered = ends.filter((e) => e.delivered).length;
  return { key: notificationKey(event), delivered, failed: ends.length - delivered, ends };
}

/** Why a delivery ended without success, and after how many attempts (0 when the failure does not say). */
function failureOf(err: unknown, retryForMs: number): { attempts: number; error: string } {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  const gaveUp = (last: string) => `gave up after retrying for ${Math.round(retryForMs / 1000)} s${last ? `; last: ${last}` : ''}`;
  if (cause instanceof ApplicationFailure && cause.nonRetryable) {
    const attempt = (cause.details?.[0] as { attempt?: number } | undefined)?.attempt ?? 0;
    return { attempts: attempt, error: cause.message };
  }
  if (cause instanceof ApplicationFailure) return { attempts: 0, error: gaveUp(cause.message) };
  if (cause instanceof TimeoutFailure) return { attempts: 0, error: gaveUp(cause.cause instanceof Error ? cause.cause.message : '') };
  return { attempts: 0, error: cause instanceof Error ? cause.message : String(cause) };
}
