/**
 * Another process holds the state DB's write lock for 8 s while a real `keeper worker` runs, as ah's writer might,
 * and a service crashes meanwhile. The worker's writes (its looks' bookkeeping, the event watcher's cursor and
 * state, the tick's transactions) give way to the lock at once and wait for it awaited (src/db/busy.ts), never in
 * SQLite's own busy wait: its event loop stays free, as it measures itself (keeper_event_loop_delay_max_seconds, and a
 * warn line past 1 s), and the crash is committed once the lock is gone, once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crashContainer } from '../helpers/crash';
import { waitFor } from '../helpers/fixtures';
import { holdWriteLock } from '../helpers/sqlite-lock';
import { addTenant, deployments, service } from '../reconcile/rows';
import { lookedAtService, watchedHost, type WatchedHost } from './world';

const LOCK_MS = 8_000;
const BOUND_MS = 120_000;
let h: WatchedHost;

beforeAll(async () => (h = await watchedHost('look-sqlite-lock', {}, { metrics: true })), 180_000);
afterAll(async () => h?.stop(), 120_000);

/** The worker's own measure of its event loop: the longest hold of its last 10 s window, in seconds. */
async function loopDelaySec(): Promise<number> {
  const text = await (await fetch(h.metricsUrl)).text();
  const m = text.match(/^keeper_event_loop_delay_max_seconds\{keeper_host="[^"]+"\} ([\d.e+-]+)$/m);
  if (!m) throw new Error(`no keeper_event_loop_delay_max_seconds in the exposition:\n${text.slice(0, 2000)}`);
  return Number(m[1]);
}

describe("another writer's lock on the state DB", () => {
  it("leaves the worker's event loop free, and the crash during it is committed once it is gone", async () => {
    const s = await lookedAtService(h, addTenant(h.db), BOUND_MS);
    const lock = holdWriteLock(h.file, LOCK_MS);
    await lock.locked();
    const lockedAt = Date.now();
    await crashContainer(h.fixture.docker, s.cid); // its events, a look and a tick all meet the lock
    const delays: number[] = [];
    while (!lock.releasedAt()) {
      delays.push(await loopDelaySec());
      await new Promise((r) => setTimeout(r, 1000));
    }
    const committedAt = await waitFor(
      'the crash committed',
      () => (service(h.db, s.sid).crash_count === 1 ? Date.now() : undefined),
      BOUND_MS,
      100,
    );
    // Two windows of the worker's measure after the release cover the lock whole.
    const afterRelease = Date.now();
    await waitFor(
      'two more windows of the measure',
      async () => (delays.push(await loopDelaySec()), Date.now() - afterRelease > 21_000),
      60_000,
      1000,
    );
    console.log(
      `a held write lock (${lock.releasedAt() - lockedAt} ms): crash committed ${committedAt - lock.releasedAt()} ms after the release; ` +
        `the worker's longest event-loop hold per 10 s window: ${Math.round(Math.max(...delays) * 1000)} ms`,
    );
    expect(Math.max(...delays)).toBeLessThan(1);
    expect(h.worker.output).not.toMatch(/the worker's event loop was held/);
    expect(service(h.db, s.sid)).toMatchObject({ crash_count: 1 });
    expect(deployments(h.db, s.sid).filter((d) => d.status === 'crashed')).toHaveLength(1);
  }, 300_000);
});
