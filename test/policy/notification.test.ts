/** The alerts' words, keys and bodies, and which receiver answers are worth another attempt. Pure. */
import { describe, expect, it } from 'vitest';
import { genericBody, isRetryableStatus, notificationKey, notificationText, slackBody } from '../../src/policy/notification';
import type { NotificationEvent } from '../../src/contracts/notification';

const AT_MS = Date.UTC(2026, 11, 2, 10, 0, 0);
const opened: NotificationEvent = {
  kind: 'circuit-opened',
  hostId: 'h1',
  serviceId: 'svc-1',
  opening: 7,
  escalation: 2,
  atMs: AT_MS,
  retryAt: AT_MS / 1000 + 1800,
  deaths: [
    { diedAtMs: AT_MS - 60_000, reason: 'exit code 3', containerId: 'abc' },
    { diedAtMs: AT_MS - 1000, reason: 'exit code 137 (OOM killed)', containerId: 'abc' },
  ],
};

describe('notification events', () => {
  it('keys one event per host, service, opening and kind', () => {
    expect(notificationKey(opened)).toBe('keeper/h1/svc-1/opening-7/circuit-opened');
    expect(notificationKey({ ...opened, opening: 8 })).not.toBe(notificationKey(opened));
    expect(notificationKey({ ...opened, kind: 'circuit-closed' })).not.toBe(notificationKey(opened));
    const later: NotificationEvent = { ...opened, atMs: AT_MS + 5 };
    expect(notificationKey(later)).toBe(notificationKey(opened)); // a retry is the same event
  });

  it('keys an opening apart from its escalation: the same escalation after a decay is another opening, another key', () => {
    const again: NotificationEvent = { ...opened, opening: 9, escalation: 2 };
    expect(notificationKey(again)).toBe('keeper/h1/svc-1/opening-9/circuit-opened');
    expect(notificationKey(again)).not.toBe(notificationKey(opened));
  });

  it("keys an event of a run from before openings by its generation, as it began: a shape today's keys never take", () => {
    const legacy: NotificationEvent = { kind: 'circuit-opened', hostId: 'h1', serviceId: 'svc-1', generation: 7, atMs: AT_MS };
    expect(notificationKey(legacy)).toBe('keeper/h1/svc-1/g7/circuit-opened');
    expect(notificationKey(legacy)).not.toBe(notificationKey(opened)); // opening 7 is not generation 7
    expect(notificationText({ ...legacy, kind: 'circuit-closed', closedBy: 'timer', status: 'running' })).toBe(
      'keeper h1: service svc-1: circuit closed by its timer; service running',
    );
  });

  it('says why a circuit opened, when it retries and how to reset it', () => {
    expect(notificationText(opened)).toBe(
      'keeper h1: service svc-1: circuit opened (opening 7, escalation 2) after 2 crashes (last: exit code 137 (OOM killed)); it retries at 2026-12-02T10:30:00Z. Reset: keeper circuit reset svc-1',
    );
    expect(notificationText({ ...opened, deaths: [], retryAt: undefined })).toBe(
      'keeper h1: service svc-1: circuit opened (opening 7, escalation 2) after repeated crashes. Reset: keeper circuit reset svc-1',
    );
  });

  it('says how a circuit closed, and why recovery failed', () => {
    expect(notificationText({ ...opened, kind: 'circuit-closed', closedBy: 'reset', status: 'running' })).toBe(
      'keeper h1: service svc-1: circuit (opening 7) closed by an operator reset; service running',
    );
    expect(notificationText({ ...opened, kind: 'circuit-closed', closedBy: 'timer', status: 'stopped' })).toBe(
      'keeper h1: service svc-1: circuit (opening 7) closed by its timer; service stopped',
    );
    expect(notificationText({ ...opened, kind: 'recovery-failed', error: 'kept container is gone; redeploy required' })).toBe(
      'keeper h1: service svc-1: circuit (opening 7) closed but recovery failed: kept container is gone; redeploy required',
    );
  });

  it('gives Slack only its text, and the generic receiver every fact with the key', () => {
    expect(slackBody(opened)).toEqual({ text: notificationText(opened) });
    const body = genericBody(opened);
    expect(body).toMatchObject({
      key: 'keeper/h1/svc-1/opening-7/circuit-opened',
      kind: 'circuit-opened',
      hostId: 'h1',
      serviceId: 'svc-1',
      opening: 7,
      escalation: 2,
      at: '2026-12-02T10:00:00Z',
      deaths: opened.deaths,
      text: notificationText(opened),
    });
  });

  it('retries server errors, timeouts and rate limits, never any other 4xx', () => {
    expect([500, 502, 503, 504, 408, 429].map(isRetryableStatus)).toEqual([true, true, true, true, true, true]);
    expect([400, 401, 403, 404, 410, 422, 301, 302].map(isRetryableStatus)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});
