/**
 * The reconcile loop's local look in a real `keeper worker` at the default settings (a look every 10 s, a backstop
 * tick every hour), on a real engine reached through a proxy that holds Docker's event stream open and silent: what
 * the events would have told is still seen, without them and long before the backstop. A crash during the silence
 * is counted and the stream is found silent and reopened; a `running` row naming a container that does not exist
 * is handled; a container stopped outside ah is counted once its --engine-stop-grace has passed, not before.
 * The time each path takes is measured by `npm run bench:looks`, not here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_IMAGE, waitFor } from '../helpers/fixtures';
import { crashContainer } from '../helpers/crash';
import { addService, addTenant, service } from '../reconcile/rows';
import { lookedAtService as lookedAtServiceOf, watchedHost, watcherState, type WatchedHost } from './world';

const GRACE_SEC = 20;
/** Generous bounds on a busy machine; the schedule's tick is an hour away, so only a look can meet them. */
const BOUND_MS = 120_000;
let h: WatchedHost;

beforeAll(async () => {
  h = await watchedHost('look-reconcile', { KEEPER_ENGINE_STOP_GRACE: `${GRACE_SEC}s` });
}, 180_000);
afterAll(async () => h?.stop(), 120_000);

const lookedAtService = (tenant: string, spec: Parameters<typeof lookedAtServiceOf>[3] = {}) =>
  lookedAtServiceOf(h, tenant, BOUND_MS, spec);

describe('the reconcile look, with the event stream held open and silent', () => {
  it('counts a crash the stream never reported, marks the stream silent, and follows again once a reopened stream reports', async () => {
    const tenant = addTenant(h.db);
    const a = await lookedAtService(tenant);
    await waitFor('the event watcher to follow', () => watcherState(h.db, h.hostId) === 'following', BOUND_MS, 250);

    expect(h.proxy.stallStreams({ alsoNew: true })).toBe(1); // the watcher's stream, and every one reopened, says nothing more
    await crashContainer(h.fixture.docker, a.cid); // the kernel's SIGKILL: Docker restarts it
    await waitFor('the crash counted', () => service(h.db, a.sid).crash_count === 1, BOUND_MS, 250);
    expect(watcherState(h.db, h.hostId)).toBe('silent');
    expect(h.worker.output).toMatch(/docker event stream is silent: reopening it/);

    // The proxy lets streams through again: the next change a look finds unreported reopens the stream, which
    // replays what it missed and so proves it reports.
    h.proxy.restoreStreams();
    await waitFor(
      'the restarted container to run',
      async () => (await h.fixture.docker.inspectContainer(a.cid)).status === 'running',
      BOUND_MS,
    );
    await crashContainer(h.fixture.docker, a.cid);
    await waitFor('the second crash counted', () => service(h.db, a.sid).crash_count === 2, BOUND_MS, 250);
    await waitFor('the watcher to follow again', () => watcherState(h.db, h.hostId) === 'following', BOUND_MS, 250);
  }, 400_000);

  it('handles a running row whose container does not exist: a change made only in the DB', async () => {
    const tenant = addTenant(h.db);
    const sid = addService(h.db, tenant, { containerId: 'f'.repeat(64) });
    await waitFor('the row to leave running', () => service(h.db, sid).status !== 'running', BOUND_MS, 250);
    expect(service(h.db, sid)).toMatchObject({ status: 'crashed', crash_count: 1 });
  }, 200_000);

  it('counts a container stopped outside ah once its engine-stop grace has passed, and not before', async () => {
    const tenant = addTenant(h.db);
    const s = await lookedAtService(tenant);
    const stoppedAtMs = Date.now();
    await h.fixture.docker.stopContainer(s.cid, 1); // docker stop: the engine's own kill, then die; it stays down
    const countedAtMs = await waitFor(
      'the stop counted',
      () => (service(h.db, s.sid).crash_count === 1 ? Date.now() : undefined),
      BOUND_MS + GRACE_SEC * 1000,
      200,
    );
    expect(countedAtMs - stoppedAtMs).toBeGreaterThanOrEqual(GRACE_SEC * 1000);
    expect(service(h.db, s.sid).status).toBe('crashed');
  }, 300_000);

  // Dated when its check failed (the engine's health log), the death is one the stream owed an event of long before
  // the next look: that look finds the stream silent and requests a tick at once. Dated at each look's own time, as before, it
  // always looked too recent to blame the stream, and waited for a run to be overdue (2 minutes).
  it('restarts a container that turned unhealthy under a silent stream, found silent by the look after its check failed', async () => {
    const tenant = addTenant(h.db);
    const healthyForSec = 25;
    const s = await lookedAtService(tenant, {
      image: TEST_IMAGE,
      cmd: ['sh', '-c', 'date +%s > /tmp/started; exec sleep 86400'],
      healthcheck: {
        cmd: ['sh', '-c', `test $(( $(date +%s) - $(cat /tmp/started) )) -lt ${healthyForSec}`],
        intervalMs: 1000,
        retries: 1,
      },
    });
    await waitFor('the event watcher to follow', () => watcherState(h.db, h.hostId) === 'following', BOUND_MS, 250);
    const startedAtMs = (await h.fixture.docker.inspectContainer(s.cid)).startedAtMs!;
    h.proxy.stallStreams({ alsoNew: true });
    try {
      await waitFor('the unhealthy container counted', () => service(h.db, s.sid).crash_count === 1, BOUND_MS, 250);
      expect(service(h.db, s.sid)).toMatchObject({ last_error: 'container unhealthy (health check failed)' });
      expect(watcherState(h.db, h.hostId)).toBe('silent');
      await waitFor(
        'keeper to restart it',
        async () => (await h.fixture.docker.inspectContainer(s.cid)).startedAtMs! > startedAtMs,
        BOUND_MS,
        250,
      );
    } finally {
      h.proxy.restoreStreams();
    }
  }, 300_000);
});
