/**
 * An event is a hint, the engine's state is the truth. Docker sends a container's `die` before its container list
 * shows the death (the list lags by tens of ms; an inspect waits for the engine's exit handler and shows it), so the
 * run an event starts must inspect the container the event names rather than trust a list. The race is made
 * deliberate here: a real `keeper worker` reaches a real engine through a proxy that makes the list show each dead
 * container as it was until the container is inspected. The worker's looks are 10 minutes apart and the backstop
 * tick an hour, and the container stays down (no restart policy, so no start event requests a later tick): only the
 * run the `die` event requests can count the crash within the bound.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/fixtures';
import { crashContainer } from '../helpers/crash';
import { addTenant, service } from '../reconcile/rows';
import { lookedAtService, watchedHost, watcherState, type WatchedHost } from './world';

/** Generous on a busy machine; a look (10 min) or the backstop (1 h) cannot meet it. */
const BOUND_MS = 90_000;
let h: WatchedHost;

beforeAll(async () => {
  h = await watchedHost('event-hint', { KEEPER_RECONCILE_LOOK_INTERVAL: '10m' });
  h.proxy.lagListAfterDeaths(5 * 60_000);
}, 180_000);
afterAll(async () => {
  if (process.env.KEEPER_TEST_SHOW_WORKER) console.log(h?.worker.output);
  await h?.stop();
}, 120_000);

describe('the run a die event starts', () => {
  it('counts the death it was woken for although the container list still shows the container running', async () => {
    const tenant = addTenant(h.db);
    const s = await lookedAtService(h, tenant, BOUND_MS, { restartPolicy: 'no' });
    await waitFor('the event watcher to follow', () => watcherState(h.db, h.hostId) === 'following', BOUND_MS, 250);
    const staleBefore = h.proxy.staleListAnswers;
    await crashContainer(h.fixture.docker, s.cid);
    await waitFor('the crash counted', () => service(h.db, s.sid).crash_count === 1, BOUND_MS, 100);
    // The run did get a list that showed the dead container running: the race was run, not missed.
    expect(h.proxy.staleListAnswers).toBeGreaterThan(staleBefore);
    expect(service(h.db, s.sid)).toMatchObject({ status: 'crashed', last_error: 'container exited (exit code 137 (SIGKILL))' });
  }, 300_000);
});
