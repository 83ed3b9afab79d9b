/**
 * The pool's local look, in a real `keeper worker` at the default settings (a look every 15 s, a backstop refill
 * every 6 h) on a real engine behind a fault proxy: a pool short of its size is whole again on the look's own
 * account, whatever made it short: a warm container stopped outside keeper, one removed, a refill that failed, a
 * disk hold that clears.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replaceConditions } from '../../src/db/conditions';
import { POOL_HOLD_SUBJECT } from '../../src/policy/disk';
import { TEST_IMAGE, waitFor } from '../helpers/fixtures';
import { nowSec } from '../reconcile/rows';
import { watchedHost, type WatchedHost } from './world';

const BOUND_MS = 150_000;
const SIZE = 2;
let h: WatchedHost;

beforeAll(async () => {
  h = await watchedHost(
    'look-pool',
    { KEEPER_POOLED_TEMPLATES: 'default', KEEPER_POOL_SIZE: String(SIZE) },
    { prepare: (db) => db.prepare('UPDATE environment_templates SET base_image = ?').run(TEST_IMAGE) },
  );
}, 180_000);
// The pool's containers, volumes and network go with the file's engine.
afterAll(async () => h?.stop(), 120_000);

const ready = () =>
  h.db.prepare(`SELECT id, container_id AS cid FROM warm_pool WHERE status = 'ready' ORDER BY id`).all() as { id: string; cid: string }[];

/** The pool whole: SIZE ready rows, none of them `except`, each container running. */
async function whole(what: string, except?: string) {
  return waitFor(
    what,
    async () => {
      const rows = ready();
      if (rows.length !== SIZE || rows.some((r) => r.id === except)) return undefined;
      const states = await Promise.all(rows.map(async (r) => (await h.fixture.docker.inspectContainer(r.cid)).status));
      return states.every((s) => s === 'running') ? rows : undefined;
    },
    BOUND_MS,
    500,
  );
}

describe('the pool look', () => {
  it('fills the pool at the start, and replaces a warm container stopped outside keeper', async () => {
    const [first] = await whole('the first refill');
    await h.fixture.docker.stopContainer(first.cid, 1);
    await whole('the stopped container replaced', first.id);
  }, 200_000);

  it('replaces a warm container that was removed', async () => {
    const [first] = ready();
    await h.fixture.docker.removeContainer(first.cid, { force: true });
    await whole('the removed container replaced', first.id);
  }, 200_000);

  it('fills the pool again after a refill that failed', async () => {
    h.proxy.fail({ method: 'POST', path: /^\/containers\/create$/, status: 500, times: 3 });
    const [first] = ready();
    await h.fixture.docker.removeContainer(first.cid, { force: true });
    await whole('the pool whole after the failed creates', first.id);
    expect(h.proxy.requests.filter((r) => r.injected && r.path === '/containers/create')).toHaveLength(3);
  }, 200_000);

  it('fills the pool once a disk hold clears', async () => {
    // Disk pressure held the pool (as the disk watcher records it); the disk is in fact below --disk-warn.
    replaceConditions(h.db, { hostId: h.hostId, loop: 'disk', now: nowSec() }, [
      { subject: POOL_HOLD_SUBJECT, state: 'held', message: 'pool held by disk pressure', cleared: 'pool hold cleared' },
    ]);
    const [first] = ready();
    await h.fixture.docker.removeContainer(first.cid, { force: true });
    await waitFor('the disk watcher to clear the hold', () => h.worker.output.includes('"pool hold cleared"'), BOUND_MS, 500);
    await whole('the pool whole after the hold cleared', first.id);
  }, 200_000);
});
