/**
 * What keeper tells an operator's webhook, pure: the events (a circuit opened, closed, or its recovery failed),
 * their idempotency keys, and the two bodies a receiver can ask for (Slack's incoming-webhook `{ text }`, and a
 * generic JSON document with every fact). Workflow code imports this module: it stays deterministic.
 */
import type { NotificationEvent } from '../contracts/notification';
import { closedWords, isoTime, openingInParens } from './circuit-words';

/**
 * The event's idempotency key: the same for every delivery attempt and every workflow that could send it, so a
 * receiver drops repeats. One per host, service, circuit opening and kind: `keeper/<host>/<service>/opening-7/<kind>`.
 * An opening's number never repeats for a service, and this shape never matches a key sent before openings were
 * numbered (`…/g<generation>/…`, the escalation level, which did repeat after a decay): only the events of runs that
 * began before then still carry a generation, and keep that key (compatibility).
 */
export function notificationKey(e: Pick<NotificationEvent, 'kind' | 'hostId' | 'serviceId' | 'opening' | 'generation'>): string {
  const which = e.opening !== undefined ? `opening-${e.opening}` : `g${e.generation ?? 0}`;
  return `keeper/${e.hostId}/${e.serviceId}/${which}/${e.kind}`;
}

/** The event in one line, for a person: what Slack shows, and the generic body's `text`. */
export function notificationText(e: NotificationEvent): string {
  const who = `keeper ${e.hostId}: service ${e.serviceId}`;
  const circuit = `circuit${openingInParens({ opening: e.opening })}`;
  switch (e.kind) {
    case 'circuit-opened': {
      const deaths = e.deaths ?? [];
      const last = deaths[deaths.length - 1];
      const why = last ? `after ${deaths.length} crash${deaths.length === 1 ? '' : 'es'} (last: ${last.reason})` : 'after repeated crashes';
      const until = e.retryAt ? `; it retries at ${isoTime(e.retryAt * 1000)}` : '';
      return `${who}: circuit opened${openingInParens(e)} ${why}${until}. Reset: keeper circuit reset ${e.serviceId}`;
    }
    case 'circuit-closed':
      return `${who}: ${circuit} ${closedWords(e.closedBy, e.status)}`;
    case 'recovery-failed':
      return `${who}: ${circuit} closed but recovery failed: ${e.error ?? 'unknown error'}`;
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
