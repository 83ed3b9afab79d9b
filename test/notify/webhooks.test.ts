/**
 * Alerts on the real path: a keeper worker on the dev server, a real state DB, and real HTTP receivers on
 * loopback. A circuit's opening and its close reach a generic and a Slack-compatible receiver, signed and keyed;
 * a receiver that is down through four failed attempts of each event gets each event after it comes back, once
 * after deduplication; a receiver that answers 404 is asked once, and `keeper status` (the built CLI) names the
 * refusal.
 */
import { describe, expect, it } from 'vitest';
import { insertCrashRecords } from '../../src/db/crash-records';
import type { StateDb } from '../../src/db/open';
import { ids, taskQueueFor } from '../../src/ids';
import type { NotificationEvent } from '../../src/contracts/notification';
import { circuitBreaker, notifyOperators } from '../../src/workflows';
import { circuitResetSignal } from '../../src/workflows/messages';
import { alertingHostsForFile } from '../helpers/alerting-hosts';
import { keeper } from '../helpers/cli';
import { uniqueId, waitFor } from '../helpers/fixtures';
import { devServerForFile } from '../helpers/temporal';
import { WebhookReceiver } from '../helpers/webhook-receiver';
import { addService, addTenant, nowSec, service } from '../reconcile/rows';

const env = devServerForFile();
const SECRET = 'a-test-secret-of-32-characters!!';
const hosts = alertingHostsForFile(env);
const receiver = () => hosts.receiver();

/** A keeper host alerting `webhooks`, its worker polling until the test ends. */
const hostAlerting = (webhooks: string[], extra: Record<string, string> = {}) =>
  hosts.host({ notifyWebhook: webhooks.join(','), notifySecret: SECRET, ...extra });

/** A service whose circuit is open (ah opened it, retrying in an hour) after the two recorded deaths of its window. */
function openCircuitWithDeaths(db: StateDb): string {
  const windowStart = nowSec() - 60;
  const id = addService(db, addTenant(db), {
    status: 'crashed',
    containerId: null,
    crashCount: 5,
    crashWindowStart: windowStart,
    circuitOpen: 1,
    circuitOpenCount: 1,
    circuitRetryAt: nowSec() + 3600,
  });
  const death = (exitCode: number, oomKilled: boolean) => ({
    seenBy: 'event' as const,
    diedAtMs: Date.now() - 30_000,
    exitCode,
    oomKilled,
    engineError: '',
    logWindow: null,
  });
  insertCrashRecords(
    db,
    { serviceId: id, containerId: 'c0ffee00c0ffee00', windowStarts: [windowStart, windowStart], recordedAt: nowSec() },
    [death(3, false), death(137, true)],
    [],
  );
  return id;
}

const bodyOf = (r: WebhookReceiver, i: number) => JSON.parse(r.received[i].body) as Record<string, unknown>;

describe('alerts to webhooks', () => {
  it('alerts an opened circuit with its deaths, signed and keyed, to both receivers, and its close after a reset', async () => {
    const [generic, slack] = [await receiver(), await receiver()];
    const host = await hostAlerting([generic.url(), `slack:${slack.url()}`]);
    const svc = openCircuitWithDeaths(host.db);
    const handle = await env.client.workflow.start(circuitBreaker, {
      taskQueue: taskQueueFor(host.settings.hostId),
      workflowId: ids.circuit(host.settings.hostId, svc),
      args: [{ serviceId: svc }],
    });
    await waitFor('the opened alert at both receivers', () => generic.received.length === 1 && slack.received.length === 1, 30_000);
    // Taken over by its workflow: keeper's first opening of this service, opening 1.
    const openedKey = `keeper/${host.settings.hostId}/${svc}/opening-1/circuit-opened`;
    expect(generic.received[0].headers).toMatchObject({
      'idempotency-key': openedKey,
      'x-keeper-event': 'circuit-opened',
      'content-type': 'application/json',
    });
    expect(WebhookReceiver.signedWith(generic.received[0], SECRET)).toBe(true);
    expect(WebhookReceiver.signedWith(slack.received[0], SECRET)).toBe(true);
    expect(bodyOf(generic, 0)).toMatchObject({
      key: openedKey,
      kind: 'circuit-opened',
      serviceId: svc,
      opening: 1,
      escalation: 1,
      deaths: [{ reason: 'exit code 3, restarted by Docker' }, { reason: 'exit code 137 (OOM killed), restarted by Docker' }],
    });
    expect(Object.keys(bodyOf(slack, 0))).toEqual(['text']);
    expect(bodyOf(slack, 0).text).toContain(
      `service ${svc}: circuit opened (opening 1, escalation 1) after 2 crashes (last: exit code 137 (OOM killed), restarted by Docker)`,
    );
    expect((await handle.describe()).memo).toMatchObject({
      deaths: [{ reason: 'exit code 3, restarted by Docker' }, { reason: 'exit code 137 (OOM killed), restarted by Docker' }],
    });

    await handle.signal(circuitResetSignal, 'test');
    expect(await handle.result()).toMatchObject({ closedBy: 'reset', status: 'stopped' });
    await waitFor('the closed alert at both receivers', () => generic.received.length === 2 && slack.received.length === 2, 30_000);
    expect(generic.received[1].headers['idempotency-key']).toBe(`keeper/${host.settings.hostId}/${svc}/opening-1/circuit-closed`);
    expect(bodyOf(slack, 1).text).toContain('circuit (opening 1) closed by an operator reset; service stopped');
    expect(service(host.db, svc).circuit_open).toBe(0);
    const status = await waitFor(
      'keeper status to count 4 deliveries',
      async () => {
        const out = await keeper(['status', '--db', host.file, '--host-id', host.settings.hostId, '--notify-webhook', generic.url()]);
        return out.stdout.includes('4 delivered, 0 failed') ? out : undefined;
      },
      20_000,
    );
    expect(status.stdout).not.toContain('/hook'); // targets are shown by origin and hash, never by path (tokens live there)
  });

  it('a receiver down through four failed attempts of each event gets each event once (after deduplication) when it comes back', async () => {
    const r = await receiver();
    const host = await hostAlerting([r.url()]);
    await r.down();
    const at = Date.now();
    const events: NotificationEvent[] = [
      { kind: 'circuit-opened', hostId: host.settings.hostId, serviceId: 'svc-down', opening: 1, escalation: 1, atMs: at, deaths: [] },
      {
        kind: 'circuit-closed',
        hostId: host.settings.hostId,
        serviceId: 'svc-down',
        opening: 1,
        escalation: 1,
        atMs: at,
        closedBy: 'timer',
        status: 'running',
      },
      {
        kind: 'recovery-failed',
        hostId: host.settings.hostId,
        serviceId: 'svc-down',
        opening: 2,
        escalation: 2,
        atMs: at,
        error: 'kept container is gone',
      },
    ];
    const handles = await Promise.all(
      events.map((e) =>
        env.client.workflow.start(notifyOperators, {
          taskQueue: taskQueueFor(host.settings.hostId),
          workflowId: uniqueId('notify-down-'),
          args: [e],
        }),
      ),
    );
    // The outage itself: the receiver stays down until every delivery has failed and been retried with backoff
    // (1, 2, 4, 8 s): its fifth attempt is scheduled.
    const attemptsNow = () =>
      Promise.all(
        handles.map(
          async (h) =>
            (await h.describe()).raw.pendingActivities?.find((a) => a.activityType?.name === 'deliverNotification')?.attempt ?? 0,
        ),
      );
    await waitFor('each delivery to be on its fifth attempt', async () => (await attemptsNow()).every((n) => n >= 5), 120_000, 500);
    expect(r.received).toHaveLength(0);
    const upAt = Date.now();
    await r.up();
    const results = await Promise.all(handles.map((h) => h.result()));
    expect(results.map((x) => [x.delivered, x.failed])).toEqual([
      [1, 0],
      [1, 0],
      [1, 0],
    ]);
    for (const x of results) expect(x.ends[0].attempts).toBeGreaterThan(4); // it was retried through the outage
    expect(r.uniqueKeys().sort()).toEqual(
      events.map((e) => `keeper/${host.settings.hostId}/svc-down/opening-${e.opening}/${e.kind}`).sort(),
    );
    console.log(
      `webhook down ${Math.round((upAt - at) / 1000)} s: delivered ${results.map((x) => `after ${x.ends[0].attempts} attempts`).join(', ')}; ` +
        `${r.received.length} requests for ${r.uniqueKeys().length} events, ${Math.round((Math.max(...r.received.map((x) => x.atMs)) - at) / 1000)} s after the first attempt`,
    );
  }, 300_000);

  it('a receiver that answers 404 is asked once, and keeper status names the refusal', async () => {
    const r = await receiver();
    r.status = 404;
    const host = await hostAlerting([r.url()]);
    const event: NotificationEvent = {
      kind: 'circuit-opened',
      hostId: host.settings.hostId,
      serviceId: 'svc-404',
      opening: 1,
      escalation: 1,
      atMs: Date.now(),
      deaths: [],
    };
    const result = await env.client.workflow.execute(notifyOperators, {
      taskQueue: taskQueueFor(host.settings.hostId),
      workflowId: uniqueId('notify-404-'),
      args: [event],
    });
    expect(result).toMatchObject({ delivered: 0, failed: 1 });
    expect(result.ends[0]).toMatchObject({ attempts: 1, error: expect.stringMatching(/refused the notification: HTTP 404$/) });
    expect(r.received).toHaveLength(1);
    const out = await keeper(['status', '--db', host.file, '--host-id', host.settings.hostId, '--notify-webhook', r.url()]);
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(
      /0 delivered, 1 failed \(30 days\); last failure \d+ s ago: circuit-opened of svc-404 to http:\/\/127\.0\.0\.1:\d+ \(\w{12}\): .*HTTP 404/,
    );
  });
});
