/**
 * A run request Temporal refuses for good, in a real `keeper worker`: an operator deleted the host's reconcile
 * schedule, and a crash requests a tick (through the schedule, which is gone: NOT_FOUND). The worker says so at warn,
 * counts it in keeper_run_requests_total{outcome="refused"}, keeps it for `keeper status` with since when and its
 * error, and sends it again; once the schedule is back (as the worker's next start makes it), the kept request is
 * taken and the crash committed, and `keeper status` shows nothing failing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ids } from '../../src/ids';
import { ensureLoopSchedules } from '../../src/loops/schedules';
import { keeper } from '../helpers/cli';
import { crashContainer } from '../helpers/crash';
import { testSettings, waitFor } from '../helpers/fixtures';
import { addTenant, service } from '../reconcile/rows';
import { lookedAtService, watchedHost, type WatchedHost } from './world';

const BOUND_MS = 120_000;
let h: WatchedHost;

beforeAll(async () => (h = await watchedHost('look-refused', {}, { metrics: true })), 180_000);
afterAll(async () => h?.stop(), 120_000);

const status = async () => {
  const r = await keeper(['status', '--db', h.file, '--host-id', h.hostId], { DOCKER_HOST: h.proxy.dockerHost });
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
};

describe('a run request whose schedule is gone', () => {
  it('is said at warn, counted, shown by keeper status with since when, kept, and taken once the schedule is back', async () => {
    const s = await lookedAtService(h, addTenant(h.db), BOUND_MS);
    await h.client.schedule.getHandle(ids.schedule(h.hostId, 'reconcile')).delete(); // an operator's mistake
    const deletedAtSec = Math.floor(Date.now() / 1000);
    await crashContainer(h.fixture.docker, s.cid);
    await h.worker.waitForOutput(/"msg":"Temporal refused a run request: it cannot be taken until an operator mends its cause/, BOUND_MS);

    const shown = await status();
    expect(shown).toMatch(/^run requests not taken$/m);
    const row = shown.match(/^ {2}reconcile +since (.+?) ago +(\d+) +(.+?) +REFUSED: (.+)$/m);
    expect(row, shown).not.toBeNull();
    expect(row![4]).toMatch(/not found/i);
    const failing = h.db.prepare('SELECT failing_since AS since FROM keeper_request_failures WHERE host_id = ?').get(h.hostId) as {
      since: number;
    };
    expect(failing.since).toBeGreaterThanOrEqual(deletedAtSec);
    const exposition = await (await fetch(h.metricsUrl)).text();
    expect(exposition).toMatch(/^keeper_run_requests_total\{loop="reconcile",outcome="refused",keeper_host="[^"]+"\} [1-9]\d*$/m);
    expect(service(h.db, s.sid).crash_count).toBe(0); // no tick could run

    // The schedule back, as the worker's next start creates it: the kept request is taken, the crash committed.
    await ensureLoopSchedules(h.client, testSettings({ hostId: h.hostId }), ['reconcile']);
    await waitFor('the crash committed', () => service(h.db, s.sid).crash_count === 1, BOUND_MS, 250);
    await h.worker.waitForOutput(/run request taken after Temporal did not take it/, BOUND_MS);
    expect(await status()).not.toMatch(/^run requests not taken$/m);
  }, 400_000);
});
