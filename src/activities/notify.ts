/**
 * The notifyOperators workflow's activities. A delivery is one attempt; Temporal retries it. A receiver that
 * refuses the request (a 4xx other than 408 and 429), or a target no longer configured, fails it as
 * non-retryable: repeating the same request cannot succeed.
 */
import { activityInfo } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { HostDeps } from '../host/deps';
import { deliverNotification, NotificationTargetGone, planNotification, recordNotifications } from '../host/notifications';
import type { Delivered, DeliveryEnd, NotificationEvent, NotificationPlan } from '../contracts/notification';
import { WebhookRefused } from '../notify/webhook';

export function createNotifyActivities(deps: HostDeps) {
  const log = deps.log.child({ loop: 'notify' });
  return {
    planNotification: async (): Promise<NotificationPlan> => planNotification(deps),

    async deliverNotification(targetId: string, event: NotificationEvent): Promise<Delivered> {
      try {
        return { status: await deliverNotification(deps, targetId, event), attempt: activityInfo().attempt };
      } catch (err) {
        if (!(err instanceof WebhookRefused || err instanceof NotificationTargetGone)) throw err;
        throw ApplicationFailure.create({
          message: err.message,
          type: err.name,
          nonRetryable: true,
          details: [{ attempt: activityInfo().attempt }],
        });
      }
    },

    recordNotifications: async (event: NotificationEvent, ends: DeliveryEnd[]): Promise<void> =>
      recordNotifications({ ...deps, log }, event, ends),
  };
}

/** What the workflows proxy (`proxyActivities<NotifyActivities>`): the types only. */
export type NotifyActivities = ReturnType<typeof createNotifyActivities>;
