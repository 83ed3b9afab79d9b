/**
 * What keeper tells an operator's webhook, pure: the events (a circuit opened, closed, or its recovery failed),
 * their idempotency keys, and the two bodies a receiver can ask for (Slack's incoming-webhook `{ text }`, and a
 * generic JSON document with every fact). Workflow code imports this module: it stays deterministic.
 */
import type { NotificationEvent } from '../contracts/notification';
import { closedWords, isoTime } from './circuit-words';

/**
 * The event's idempotency key: the same for every delivery attempt and every workflow that could send it, so a
 * receiver drops repeats. One per host, service, circuit generation and kind.
 */
export function notificationKey(e: Pick<NotificationEvent, 'kind' | 'hostId' | 'serviceId' | 'generation'>): string {
  return `keeper/${e.hostId}/${e.serviceId}/g${e.generation}/${e.kind}`;
}

/** The event in one line, for a person: what Slack shows, and the generic body's `text`. */
export function notificationText(e: NotificationEvent): string {
  const who = `keeper ${e.hostId}: service ${e.serviceId}`;
  switch (e.kind) {
    case 'circuit-opened': {
      const deaths = e.deaths ?? [];
      const last = deaths[deaths.length - 1];
      const why = last ? `after ${deaths.length} crash${deaths.length === 1 ? '' : 'es'} (last: ${last.reason})` : 'after repeated crashes';
      const until = e.retryAt ? `; it retries at ${isoTime(e.retryAt * 1000)}` : '';
      return `${who}: circuit opened ${why}${until}. Reset: keeper circuit reset ${e.serviceId}`;
    }
    case 'circuit-closed':
      return `${who}: circuit ${closedWords(e.closedBy, e.status)}`;
    case 'recovery-failed':
      return `${who}: circuit closed but recovery failed: ${e.error ?? 'unknown error'}`;
  }
}

/** The generic body: every fact of the event, plus its key and text. */
export function genericBody(e: NotificationEvent): Record<string, unknown> {
  return { key: notificationKey(e), ...e, at: isoTime(e.atMs), text: notificationText(e) };
}

/** Slack's incoming-webhook body (also what Mattermost, Rocket.Chat and Discord's /slack endpoint take). */
export function slackBody(e: NotificationEvent): Record<string, unknown> {
  return { text: notificationText(e) };
}

/**
 * Whether a receiver's answer is worth another attempt: a server error, a timeout, or a request to slow down. Any
 * other 4xx says the request itself is wrong (a revoked token, a URL that no longer exists): retrying repeats it.
 */
export function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}
