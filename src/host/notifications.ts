/**
 * Alerts to the operator's webhooks (--notify-webhook): which targets this host has, one delivery to one of
 * them, and the record of how each ended. The retries, their backoff and the give-up time are Temporal's (the
 * notifyOperators workflow); a delivery here is one attempt.
 */
import {
  lastFailedNotification,
  notificationCounts,
  NOTIFICATION_OUTCOME_RETENTION_S,
  recordNotificationOutcomes,
  type NotificationOutcome,
} from '../db/notifications';
import { postWebhook, webhookTarget, type WebhookTarget } from '../notify/webhook';
import { recordDeliveries } from '../metrics';
import { notificationKey } from '../policy/notification';
import type { DeliveryEnd, NotificationEvent, NotificationPlan } from '../contracts/notification';
import { unixSeconds } from '../time';
import type { HostDeps } from './deps';

/** The webhook is no longer in this host's settings (they changed since the alert was raised). */
export class NotificationTargetGone extends Error {
  constructor(id: string) {
    super(`webhook ${id} is no longer configured (--notify-webhook changed): not delivered`);
    this.name = 'NotificationTargetGone';
  }
}

const targetsOf = (deps: Pick<HostDeps, 'settings'>): WebhookTarget[] => deps.settings.notifyWebhooks.map(webhookTarget);

export function planNotification(deps: Pick<HostDeps, 'settings'>): NotificationPlan {
  return { targets: targetsOf(deps).map(({ id, shown }) => ({ id, shown })), retryForMs: deps.settings.notifyRetryForMs };
}

/** One attempt to deliver `event` to the target `targetId`; see postWebhook for what each failure throws. */
export async function deliverNotification(deps: Pick<HostDeps, 'settings'>, targetId: string, event: NotificationEvent): Promise<number> {
  const target = targetsOf(deps).find((t) => t.id === targetId);
  if (!target) throw new NotificationTargetGone(targetId);
  return postWebhook(target, event, deps.settings.notifySecret);
}

/** Records how each delivery of `event` ended, and logs the ones that failed: keeper status shows them. */
export function recordNotifications(
  deps: Pick<HostDeps, 'db' | 'log' | 'clock' | 'metrics'>,
  event: NotificationEvent,
  ends: DeliveryEnd[],
): void {
  const now = unixSeconds(deps.clock);
  const outcomes: NotificationOutcome[] = ends.map((e) => ({
    eventKey: notificationKey(event),
    targetId: e.target.id,
    targetShown: e.target.shown,
    kind: event.kind,
    serviceId: event.serviceId,
    outcome: e.delivered ? 'delivered' : 'failed',
    attempts: e.attempts,
    error: e.error ?? '',
    finishedAt: now,
  }));
  recordNotificationOutcomes(deps.db, outcomes, now);
  if (deps.metrics) recordDeliveries(deps.metrics, event.kind, ends);
  for (const e of ends) {
    const fields = { serviceId: event.serviceId, kind: event.kind, target: e.target.shown, attempts: e.attempts };
    if (e.delivered) deps.log.info('notification delivered', fields);
    else deps.log.warn('notification not delivered', { ...fields, error: e.error });
  }
}

/** What `keeper status` says of alerts: the webhooks, how deliveries ended (kept 30 days), the last failure. */
export function notificationStatus(deps: Pick<HostDeps, 'db' | 'settings' | 'clock'>) {
  const since = unixSeconds(deps.clock) - NOTIFICATION_OUTCOME_RETENTION_S;
  return {
    webhooks: targetsOf(deps).map((t) => t.shown),
    signed: deps.settings.notifySecret !== undefined,
    ...notificationCounts(deps.db, since),
    lastFailure: lastFailedNotification(deps.db, since),
  };
}

export type NotificationStatus = ReturnType<typeof notificationStatus>;
