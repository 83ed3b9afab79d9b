/**
 * The one place keeper speaks HTTP to an operator's receiver: a webhook target (`URL`, or `slack:URL` for a
 * Slack-compatible body), and one signed POST to it. A URL can carry a token (Slack's do), so a target is shown
 * and logged by its origin and a short hash only, never by its whole URL.
 */
import crypto from 'node:crypto';
import { genericBody, isRetryableStatus, notificationKey, slackBody } from '../policy/notification';
import type { NotificationEvent } from '../contracts/notification';

export interface WebhookTarget {
  /** Stable across restarts for the same URL (a hash of it), so a delivery names its target even if the list changes. */
  id: string;
  format: 'slack' | 'generic';
  url: string;
  /** What status lines and logs say: the origin and the id, never the path or query (tokens live there). */
  shown: string;
}

/** A target from its setting's text (see --notify-webhook). */
export function webhookTarget(raw: string): WebhookTarget {
  const slack = /^slack:/i.test(raw);
  const url = raw.replace(/^slack:/i, '');
  const id = crypto.createHash('sha256').update(url).digest('hex').slice(0, 12);
  return { id, format: slack ? 'slack' : 'generic', url, shown: `${new URL(url).origin} (${id})` };
}

/** The receiver answered with a status that says the request is wrong: retrying would repeat it. */
export class WebhookRefused extends Error {
  constructor(
    readonly status: number,
    target: WebhookTarget,
  ) {
    super(`webhook ${target.shown} refused the notification: HTTP ${status}`);
    this.name = 'WebhookRefused';
  }
}

/** How long one request may take before it counts as a failed attempt. */
export const WEBHOOK_REQUEST_TIMEOUT_MS = 10_000;

/** The headers a receiver reads: the idempotency key, the event kind, and the body's HMAC when a secret is set. */
export function webhookHeaders(event: NotificationEvent, body: string, secret: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'keeper-notify/1',
    'idempotency-key': notificationKey(event),
    'x-keeper-event': event.kind,
  };
  if (secret) headers['x-keeper-signature'] = `sha256=${crypto.createHmac('sha256', secret).update(body).digest('hex')}`;
  return headers;
}

/**
 * POSTs the event once. Resolves on 2xx; throws WebhookRefused on a status not worth retrying (a redirect too:
 * a signed body is not re-sent to wherever a 3xx points); throws a plain Error (retry it) on anything else: a
 * 5xx, 408, 429, a refused connection, a timeout.
 */
export async function postWebhook(target: WebhookTarget, event: NotificationEvent, secret: string | undefined): Promise<number> {
  const body = JSON.stringify(target.format === 'slack' ? slackBody(event) : genericBody(event));
  let status: number;
  try {
    const res = await fetch(target.url, {
      method: 'POST',
      body,
      headers: webhookHeaders(event, body, secret),
      redirect: 'manual',
      signal: AbortSignal.timeout(WEBHOOK_REQUEST_TIMEOUT_MS),
    });
    status = res.status;
    await res.body?.cancel(); // the answer's body is not read: a receiver cannot make keeper hold it
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`webhook ${target.shown} unreachable: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
  }
  if (status >= 200 && status < 300) return status;
  if (isRetryableStatus(status)) throw new Error(`webhook ${target.shown} answered HTTP ${status}`);
  throw new WebhookRefused(status, target);
}
