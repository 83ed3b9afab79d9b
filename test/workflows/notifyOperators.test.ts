/**
 * notifyOperators with stub activities on the time-skipping server: one delivery per webhook, each retried on
 * its own, a refusal not retried, a delivery given up after --notify-retry-for, and how each ended recorded.
 * The real HTTP side (headers, signature, a receiver that is down) is in test/notify/webhooks.test.ts.
 */
import { activityInfo } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it, vi } from 'vitest';
import type { Activities } from '../../src/loops/registry';
import type { NotificationEvent, NotificationPlan } from '../../src/contracts/notification';
import { notifyOperators } from '../../src/workflows';
import { executeWithStubs, stubWorkerEnvForFile } from './helpers';

const env = stubWorkerEnvForFile();
const EVENT: NotificationEvent = {
  kind: 'circuit-opened',
  hostId: 'h1',
  serviceId: 'svc-1',
  opening: 1,
  escalation: 1,
  atMs: 1_900_000_000_000,
  deaths: [],
};
const A = { id: 'aaaaaaaaaaaa', shown: 'http://127.0.0.1:1 (aaaaaaaaaaaa)' };
const B = { id: 'bbbbbbbbbbbb', shown: 'http://127.0.0.1:2 (bbbbbbbbbbbb)' };

function stubs(plan: NotificationPlan, deliver: Activities['deliverNotification']) {
  return {
    planNotification: vi.fn<Activities['planNotification']>(async () => plan),
    deliverNotification: vi.fn<Activities['deliverNotification']>(deliver),
    recordNotifications: vi.fn<Activities['recordNotifications']>(async () => undefined),
  } satisfies Pick<Activities, 'planNotification' | 'deliverNotification' | 'recordNotifications'>;
}

describe('notifyOperators', () => {
  it('delivers the event to every webhook and records how each ended', async () => {
    const s = stubs({ targets: [A, B], retryForMs: 60_000 }, async () => ({ status: 204, attempt: activityInfo().attempt }));
    const { result } = await executeWithStubs(env, s, notifyOperators, EVENT);
    expect(result).toMatchObject({ key: 'keeper/h1/svc-1/opening-1/circuit-opened', delivered: 2, failed: 0 });
    expect(s.deliverNotification.mock.calls.map((c) => c[0]).sort()).toEqual([A.id, B.id]);
    expect(s.deliverNotification.mock.calls[0][1]).toEqual(EVENT);
    expect(s.recordNotifications.mock.calls).toEqual([
      [
        EVENT,
        [
          { target: A, delivered: true, attempts: 1 },
          { target: B, delivered: true, attempts: 1 },
        ],
      ],
    ]);
  });

  it('retries a failing webhook on its own, without sending the event again to the one that got it', async () => {
    const s = stubs({ targets: [A, B], retryForMs: 60_000 }, async (id) => {
      if (id === B.id && activityInfo().attempt < 2) throw new Error('webhook answered HTTP 503');
      return { status: 200, attempt: activityInfo().attempt };
    });
    const { result } = await executeWithStubs(env, s, notifyOperators, EVENT);
    expect(result.ends).toEqual([
      { target: A, delivered: true, attempts: 1 },
      { target: B, delivered: true, attempts: 2 },
    ]);
    expect(s.deliverNotification.mock.calls.filter((c) => c[0] === A.id)).toHaveLength(1);
    expect(s.deliverNotification.mock.calls.filter((c) => c[0] === B.id)).toHaveLength(2);
  });

  it('does not retry a webhook that refused the event (4xx), and records the refusal', async () => {
    const s = stubs({ targets: [A], retryForMs: 60_000 }, async () => {
      throw ApplicationFailure.create({
        message: 'webhook A refused the notification: HTTP 404',
        type: 'WebhookRefused',
        nonRetryable: true,
        details: [{ attempt: 1 }],
      });
    });
    const { result } = await executeWithStubs(env, s, notifyOperators, EVENT);
    expect(result).toMatchObject({ delivered: 0, failed: 1 });
    expect(result.ends).toEqual([{ target: A, delivered: false, attempts: 1, error: 'webhook A refused the notification: HTTP 404' }]);
    expect(s.deliverNotification).toHaveBeenCalledTimes(1);
    expect(s.recordNotifications.mock.calls[0][1]).toEqual(result.ends);
  });

  it('gives a delivery up after --notify-retry-for, and says so with the last error', async () => {
    const s = stubs({ targets: [A], retryForMs: 2_000 }, async () => {
      throw new Error('webhook A unreachable: ECONNREFUSED');
    });
    const { result } = await executeWithStubs(env, s, notifyOperators, EVENT);
    expect(result.failed).toBe(1);
    expect(result.ends[0].error).toMatch(/^gave up after retrying for 2 s; last: webhook A unreachable: ECONNREFUSED$/);
    expect(s.deliverNotification.mock.calls.length).toBeGreaterThan(1);
  });

  it('does nothing on a host without webhooks', async () => {
    const s = stubs({ targets: [], retryForMs: 60_000 }, async () => ({ status: 200, attempt: 1 }));
    const { result } = await executeWithStubs(env, s, notifyOperators, EVENT);
    expect(result).toMatchObject({ delivered: 0, failed: 0, ends: [] });
    expect(s.deliverNotification).not.toHaveBeenCalled();
    expect(s.recordNotifications).not.toHaveBeenCalled();
  });
});
