/**
 * GC's local look, in a real `keeper worker` (a look every minute, a backstop sweep every 6 h) on a real engine: an
 * orphan service container is swept once it passes its age guard, on the look's own account, and what is not ah's
 * stays. --gc-min-age and --gc-first-delay are short here so the test waits seconds, not minutes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/fixtures';
import { watchedHost, type WatchedHost } from './world';

const MIN_AGE_SEC = 20;
let h: WatchedHost;

beforeAll(async () => {
  h = await watchedHost('look-gc', { KEEPER_GC_MIN_AGE: `${MIN_AGE_SEC}s`, KEEPER_GC_FIRST_DELAY: '5s' });
}, 180_000);
afterAll(async () => h?.stop(), 120_000);

const exists = async (id: string) =>
  h.fixture.docker.inspectContainer(id).then(
    () => true,
    () => false,
  );

describe('the GC look', () => {
  it("sweeps an orphan container once it is past its age guard, and leaves what is not ah's", async () => {
    // A service container no row references (its service was deleted), and a container that is not ah's.
    const orphan = await h.fixture.run({
      name: `ah-gone-${Date.now()}`,
      labels: { 'ah.tenant': 'gone', 'ah.service': 'svc-gone', 'ah.managed': 'true' },
    });
    const foreign = await h.fixture.run({ name: `not-ah-${Date.now()}`, labels: {} });
    const createdAtMs = Date.now();
    const removedAtMs = await waitFor('the orphan removed', async () => ((await exists(orphan)) ? undefined : Date.now()), 240_000, 1000);
    expect(removedAtMs - createdAtMs).toBeGreaterThanOrEqual(MIN_AGE_SEC * 1000);
    expect(await exists(foreign)).toBe(true);
    // The look requested the sweep (the schedule's first sweep is 6 h away).
    expect(h.worker.output).toMatch(
      /"loop":"gc","look":"gc-containers:[0-9a-f]{12}","msg":"local look found something to do: requesting a run"/,
    );
  }, 300_000);
});
