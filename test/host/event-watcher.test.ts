/**
 * The event watcher's requests, in milliseconds: an in-memory engine (a test double, test/helpers/memory-engine.ts)
 * plays the events, a real SQLite state DB keeps the cursor. The same watcher on a real engine and a real Temporal
 * server is tested in test/watch/event-watcher-engine.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readEventWatcherState } from '../../src/db/events';
import { EventWatcher } from '../../src/watch/event-watcher';
import { lookForReconcile } from '../../src/host/reconcile/look';
import { applyObservation } from '../../src/host/reconcile/apply';
import { observeHost } from '../../src/host/reconcile/observe';
import { silentLogger } from '../../src/log';
import { crashPolicy } from '../../src/policy/deaths/decision';
import { LookRunner } from '../../src/watch/look-runner';
import { EngineView } from '../../src/watch/engine-view';
import { addService, addTenant } from '../reconcile/rows';
import { TEST_IMAGE, uniqueId, waitFor } from '../helpers/fixtures';
import { memoryHost, type MemoryHost } from './world';

const REQUEST_AFTER_START_MS = 200;
let watcher: EventWatcher | undefined;
afterEach(async () => {
  await watcher?.stop();
  watcher = undefined;
});

/** A following watcher whose requests are recorded with the time they were made. */
async function following(
  h: MemoryHost,
  opts: { request?: (serviceId?: string) => Promise<unknown>; silentReopenEveryMs?: number } = {},
): Promise<{ at: number; serviceId?: string }[]> {
  const requests: { at: number; serviceId?: string }[] = [];
  watcher = new EventWatcher({
    db: h.db,
    hints: h.deps.hints!,
    docker: h.engine,
    hostId: h.settings.hostId,
    log: silentLogger,
    debounceMs: 50,
    requestAfterStartMs: REQUEST_AFTER_START_MS,
    request: async (serviceId) => {
      requests.push({ at: Date.now(), serviceId });
      await opts.request?.(serviceId);
    },
    silentReopenEveryMs: opts.silentReopenEveryMs,
  });
  watcher.start();
  await waitFor('the catch-up request', () => requests.length === 1 && watcher!.idle, 5_000, 5);
  requests.length = 0;
  h.advance(5); // the engine's clock past the stream's opening: its events come after the watcher's `since`
  return requests;
}

/** keeper's first look at the host's services, by a tick's own observe and apply. */
async function firstLook(h: MemoryHost): Promise<void> {
  const policy = crashPolicy(h.settings);
  await applyObservation(h.deps, policy, await observeHost(h.deps, policy, h.nowSec()));
}

/** The reconcile loop's local look, run by the test, with the watcher as its event path; its requests are recorded. */
function reconcileLooks(h: MemoryHost): { looks: LookRunner; requested: string[] } {
  const requested: string[] = [];
  const policy = crashPolicy(h.settings);
  const looks = new LookRunner({
    looks: [{ loop: 'reconcile', everyMs: 60_000, look: (view) => lookForReconcile(h.deps, policy, view) }],
    view: () => new EngineView(h.engine),
    request: async (_loop, why) => void requested.push(why),
    lastRunFinishedAtMs: () => undefined,
    eventPath: watcher,
    log: silentLogger,
    clock: h.deps.clock,
  });
  return { looks, requested };
}

async function serviceContainer(
  h: MemoryHost,
  start = true,
  restartPolicy: 'no' | 'unless-stopped' = 'unless-stopped',
): Promise<{ sid: string; cid: string }> {
  h.engine.addImage(TEST_IMAGE);
  const sid = uniqueId('svc');
  const labels = { 'ah.tenant': 't1', 'ah.service': sid, 'ah.managed': 'true' };
  const cid = await h.engine.createContainer({ name: `ah-${sid}`, image: TEST_IMAGE, labels, restartPolicy });
  if (start) await h.engine.startContainer(cid);
  return { sid, cid };
}

describe('event watcher requests (in-memory engine)', () => {
  it('requests a tick at a die at once, and for the restart only once the container can be seen back up', async () => {
    const h = memoryHost();
    const { sid, cid } = await serviceContainer(h);
    const requests = await following(h);

    const diedAt = Date.now();
    h.engine.die(cid); // the restart policy starts it again at once: a die and a start
    await waitFor('the die and the later request', () => requests.length === 2 && watcher!.idle, 5_000, 5);
    expect(requests[0]).toMatchObject({ serviceId: sid });
    expect(requests[0].at - diedAt).toBeLessThan(REQUEST_AFTER_START_MS);
    expect(requests[1]).toMatchObject({ serviceId: sid });
    expect(requests[1].at - diedAt).toBeGreaterThanOrEqual(REQUEST_AFTER_START_MS);
  });

  it('follows a burst of starts with one request, at least the delay after its last start', async () => {
    const h = memoryHost();
    const containers = await Promise.all([0, 1, 2, 3].map(() => serviceContainer(h, false)));
    const requests = await following(h);

    const startTimes: number[] = [];
    for (const { cid } of containers) {
      await h.engine.startContainer(cid);
      startTimes.push(Date.now());
      await new Promise((r) => setTimeout(r, 30));
    }
    await waitFor('the requests after the starts', () => watcher!.idle && requests.length > 0, 5_000, 5);
    const lastStart = Math.max(...startTimes);
    expect(requests[0].at).toBeGreaterThanOrEqual(startTimes[0] + REQUEST_AFTER_START_MS);
    expect(Math.max(...requests.map((r) => r.at))).toBeGreaterThanOrEqual(lastStart + REQUEST_AFTER_START_MS);
    expect(requests.length).toBe(1); // four starts ~30 ms apart, each well within the 200 ms delay of the one before
  });

  it('requests a tick for a burst of starts that goes on no later than a few delays after its first start', async () => {
    const h = memoryHost();
    const containers = await Promise.all(Array.from({ length: 12 }, () => serviceContainer(h, false)));
    const requests = await following(h);
    let lastStart = 0;
    for (const { cid } of containers) {
      await h.engine.startContainer(cid);
      lastStart = Date.now();
      await new Promise((r) => setTimeout(r, 120)); // a start every 120 ms for ~1.4 s, each within the 200 ms delay
    }
    await waitFor('the requests after the starts', () => watcher!.idle && requests.length > 0, 5_000, 5);
    // The first request came while starts still came (due 4 delays after the first start, 0.8 s), not after the burst.
    expect(requests[0].at).toBeLessThan(lastStart);
    expect(requests.length).toBeGreaterThanOrEqual(2); // and the starts after it got a request of their own
  });
});

describe('a silent event stream (in-memory engine)', () => {
  it('is found by a local look that sees a death the stream did not report, reopened, and following again once a live event arrives', async () => {
    const h = memoryHost();
    // A crash that leaves its container down: under unless-stopped, Docker would restart it, and one down is stopped.
    const { sid, cid } = await serviceContainer(h, true, 'no');
    addService(h.db, addTenant(h.db), { containerId: cid }, sid);
    await firstLook(h);
    const requests = await following(h);
    const { looks, requested } = reconcileLooks(h);

    h.engine.silenceStreams(); // the stream stays open and says nothing more
    h.engine.die(cid, { restarted: false });
    await looks.lookNow('reconcile'); // at once: its event may still come
    expect(requested).toEqual([]);
    h.advance(6);
    await looks.lookNow('reconcile');
    expect(requested).toEqual([`local look: crash:${sid}@exited/0`]);
    expect(watcher!.stats.silences).toBe(1);

    // Reopened for live events only, the stream delivers those of the volume the watcher makes to prove it: following
    // again. It requests no tick of its own: the look requested the death it found.
    await waitFor('following', () => readEventWatcherState(h.db, h.settings.hostId)?.state === 'following', 30_000, 5);
    expect(requests).toEqual([]);
    expect(watcher!.stats).toMatchObject({ connects: 2, probes: 1 });
    expect(h.engine.volumes.size).toBe(0); // the probe leaves nothing behind
  });
});

describe('an unhealthy container under a silent event stream (in-memory engine)', () => {
  it('is requested by the first look past the time its event was owed: dated when its check failed, not when a look found it', async () => {
    const h = memoryHost();
    h.engine.addImage(TEST_IMAGE);
    const sid = uniqueId('svc');
    const labels = { 'ah.tenant': 't1', 'ah.service': sid, 'ah.managed': 'true' };
    const cid = await h.engine.createContainer({
      name: `ah-${sid}`,
      image: TEST_IMAGE,
      labels,
      restartPolicy: 'unless-stopped',
      healthcheck: { cmd: ['true'], intervalMs: 1000 },
    });
    await h.engine.startContainer(cid);
    h.engine.setHealth(cid, 'healthy');
    addService(h.db, addTenant(h.db), { containerId: cid }, sid);
    await firstLook(h);
    await following(h);
    const { looks, requested } = reconcileLooks(h);

    h.engine.silenceStreams();
    h.engine.setHealth(cid, 'unhealthy');
    await looks.lookNow('reconcile'); // at once: its event may still come
    expect(requested).toEqual([]);
    h.advance(10); // the next look, 10 s later: the stream owed its health_status event long ago
    await looks.lookNow('reconcile');
    expect(requested).toHaveLength(1);
    expect(watcher!.stats.silences).toBe(1);
  });
});

describe('a stream that replays history but drops live events (in-memory engine)', () => {
  it('stays silent at each reopen, until a reopened stream delivers a live event', async () => {
    const h = memoryHost();
    const { sid, cid } = await serviceContainer(h);
    addService(h.db, addTenant(h.db), { containerId: cid }, sid);
    await following(h, { silentReopenEveryMs: 100 });
    h.engine.silenceStreams({ alsoNew: true }); // every stream, reopened ones too, replays what it asks for and then says nothing
    h.engine.die(cid, { restarted: false });
    watcher!.streamMissed([{ key: `crash:${sid}@exited/0`, change: { containerId: cid, atMs: Date.now() } }]);
    await waitFor('three reopens, each with its probe', () => watcher!.stats.probes >= 3, 30_000, 5);
    expect(readEventWatcherState(h.db, h.settings.hostId)?.state).toBe('silent');

    h.engine.restoreStreams();
    await waitFor('following', () => readEventWatcherState(h.db, h.settings.hostId)?.state === 'following', 30_000, 5);
  });
});

describe('requests while Temporal does not take them (in-memory engine)', () => {
  it('keep one request in flight and at most one owed behind it, however many events arrive meanwhile', async () => {
    const h = memoryHost();
    const containers = await Promise.all([0, 1, 2, 3, 4, 5].map(() => serviceContainer(h)));
    let release!: () => void;
    const outage: { until?: Promise<void> } = {};
    const requests = await following(h, { request: () => outage.until ?? Promise.resolve() });
    outage.until = new Promise<void>((r) => (release = r)); // Temporal stops taking requests
    for (const { cid } of containers) {
      h.engine.die(cid, { restarted: false });
      await new Promise((r) => setTimeout(r, 80)); // each in a debounce window (50 ms) of its own
    }
    expect(requests).toHaveLength(1); // the first, still waiting to be taken
    release();
    await waitFor('the requests to settle', () => watcher!.idle, 30_000, 5);
    expect(requests).toHaveLength(2); // and one for everything that came meanwhile
  });
});
