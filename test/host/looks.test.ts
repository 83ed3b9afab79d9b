/**
 * The loops' local looks (src/host/<loop>/look.ts) on an in-memory engine, a test double (see test/helpers/memory-engine.ts),
 * with a real SQLite state DB: each finds exactly what a run of its loop would do now, and nothing on a quiet host.
 * The same looks in a worker on a real engine are tested in test/watch/.
 */
import { describe, expect, it } from 'vitest';
import { holdCurrentOpening } from '../../src/db/circuit-holds';
import { replaceConditions } from '../../src/db/conditions';
import { EngineView } from '../../src/watch/engine-view';
import { keysOf } from '../../src/watch/finding';
import { lookForGc } from '../../src/host/gc/look';
import { lookForPool } from '../../src/host/pool/look';
import { lookForReconcile } from '../../src/host/reconcile/look';
import { applyObservation } from '../../src/host/reconcile/apply';
import { observeHost } from '../../src/host/reconcile/observe';
import { createPoolEntry } from '../../src/host/pool/refill';
import { POOL_HOLD_SUBJECT } from '../../src/policy/disk';
import { crashPolicy } from '../../src/policy/deaths/decision';
import { TEST_IMAGE, uniqueId } from '../helpers/fixtures';
import { addService, addTenant } from '../reconcile/rows';
import { memoryHost, runningService, type MemoryHost } from './world';

/** A tick, as a run of the reconcile loop does it: what the look found is then done. */
async function tick(h: MemoryHost) {
  const policy = crashPolicy(h.settings);
  await applyObservation(h.deps, policy, await observeHost(h.deps, policy, h.nowSec()));
}

const reconcileLook = (h: MemoryHost) => lookForReconcile(h.deps, crashPolicy(h.settings));

describe('the reconcile look (in-memory engine)', () => {
  it('finds nothing on a steady host, and a death once, with its time, until a tick counts it', async () => {
    const h = memoryHost();
    // A crash that leaves its container down: under unless-stopped, Docker would restart it, and one down is stopped.
    const { sid, cid } = await runningService(h, { restartPolicy: 'no' });
    await tick(h); // keeper's first snapshot: the baseline
    h.advance(60);
    expect(keysOf(await reconcileLook(h))).toEqual([]);

    h.engine.die(cid, { restarted: false });
    const found = await reconcileLook(h);
    expect(found.items).toEqual([{ key: `crash:${sid}@exited/0`, change: { containerId: cid, atMs: h.deps.clock.nowMs() } }]);
    expect(found.serviceId).toBe(sid);
    expect(keysOf(await reconcileLook(h))).toEqual(keysOf(found)); // a look counts nothing

    await tick(h);
    expect(keysOf(await reconcileLook(h))).toEqual([]);
  });

  it("finds a running row whose container is gone, and the rows the tick's DB-only steps would change", async () => {
    const h = memoryHost();
    const { sid, cid } = await runningService(h);
    await tick(h);
    await h.engine.removeContainer(cid, { force: true });
    const stale = addService(h.db, addTenant(h.db), { status: 'deploying', updatedAt: h.nowSec() - 3600 });
    expect(keysOf(await reconcileLook(h)).sort()).toEqual([`crash:${sid}@missing/0`, `stale-deploy:${stale}`].sort());
  });

  it('finds an open circuit no workflow holds, and its running container; nothing once held and stopped', async () => {
    const h = memoryHost();
    const { sid, cid } = await runningService(h, {
      fields: { status: 'crashed', circuitOpen: 1, circuitOpenCount: 2, circuitRetryAt: h.nowSec() + 1800 },
    });
    // Opened by ah: keeper has not numbered it yet (the tick's hand-over will).
    expect(keysOf(await reconcileLook(h)).sort()).toEqual([`circuit-running:${sid}`, `circuit-unheld:${sid}@unnumbered`].sort());
    expect(holdCurrentOpening(h.db, sid, h.nowSec())).toBe(1);
    await h.engine.stopContainer(cid);
    expect(keysOf(await reconcileLook(h))).toEqual([]);
    // Held, but long past its retry time and still open: its workflow is lost.
    h.advance(1800 + 61);
    expect(keysOf(await reconcileLook(h))).toEqual([`circuit-expired:${sid}@opening1`]);
  });

  it("marks a crashed service whose container is back up as covered by the event watcher's request after its start", async () => {
    const h = memoryHost();
    const { sid } = await runningService(h, { fields: { status: 'crashed' } });
    h.advance(11); // up long enough to count as back up
    const found = await reconcileLook(h);
    expect(found.items).toEqual([{ key: `back-up:${sid}`, coveredByStartRequest: true }]);
  });

  it('swaps a snapshot that changed with nothing to count (a health check passing) itself, and requests nothing', async () => {
    const h = memoryHost();
    const { sid, cid } = await runningService(h);
    await tick(h);
    h.engine.setHealth(cid, 'healthy');
    expect(keysOf(await reconcileLook(h))).toEqual([]);
    const snapshot = h.db.prepare('SELECT health FROM keeper_container_snapshots WHERE service_id = ?').get(sid) as { health: string };
    expect(snapshot.health).toBe('healthy');
  });
});

const DEFAULT_IMAGE = 'ubuntu:24.04'; // tmpl_default's base image, as ah's schema seeds it

async function fullPool(h: MemoryHost) {
  h.engine.addImage(DEFAULT_IMAGE);
  return Promise.all([0, 1].map(() => createPoolEntry(h.deps, { entryId: uniqueId('wp'), templateId: 'tmpl_default' })));
}

describe('the pool look (in-memory engine)', () => {
  const poolHost = () => memoryHost({ pooledTemplates: 'default', poolSize: '2' });

  it('finds nothing in a full pool, and a template short of its size', async () => {
    const h = poolHost();
    h.engine.addImage(DEFAULT_IMAGE);
    expect(keysOf(await lookForPool(h.deps))).toEqual(['pool-short:tmpl_default@0']);
    await fullPool(h);
    expect(keysOf(await lookForPool(h.deps))).toEqual([]);
  });

  it('finds a ready container that is gone, or down past an engine restart, and nothing while the disk holds the pool', async () => {
    const h = poolHost();
    const [gone, stopped] = await fullPool(h);
    await h.engine.removeContainer(gone.containerId!, { force: true });
    await h.engine.stopContainer(stopped.containerId!);
    expect(keysOf(await lookForPool(h.deps))).toEqual([`pool-gone:${gone.entryId}`]);
    h.advance(20);
    expect(keysOf(await lookForPool(h.deps)).sort()).toEqual([`pool-dead:${stopped.entryId}`, `pool-gone:${gone.entryId}`].sort());

    replaceConditions(h.db, { hostId: h.settings.hostId, loop: 'disk', now: h.nowSec() }, [
      { subject: POOL_HOLD_SUBJECT, state: 'held', message: 'disk full', cleared: 'disk ok' },
    ]);
    expect(keysOf(await lookForPool(h.deps))).toEqual([]);
  });
});

describe('the reconcile look on a slow engine (in-memory engine)', () => {
  it("finds a restart that a slow list reports: the list's ages count from its answer, not from the look's start", async () => {
    const h = memoryHost();
    const { sid, cid } = await runningService(h);
    await tick(h); // keeper's last snapshot of it: t
    h.advance(3);
    h.engine.die(cid, { exitCode: 137 }); // t+3: Docker restarts it at once
    h.advance(2);
    h.engine.wedge(); // t+5: the look begins, and the engine holds its list
    const looking = reconcileLook(h);
    h.advance(10);
    h.engine.release(); // t+15: the list answers, "Up 12 seconds"
    expect(keysOf(await looking)).toEqual([`crash:${sid}@running/1`]);
    expect(keysOf(await reconcileLook(h))).toEqual([`crash:${sid}@running/1`]); // and again, until a tick counts it
  });
});

describe('the GC look (in-memory engine)', () => {
  it('finds an orphan container once it is past the age guard, and does not remove it', async () => {
    const h = memoryHost({ gcMinAge: '10m' });
    h.engine.addImage(TEST_IMAGE);
    const labels = { 'ah.tenant': 'gone', 'ah.service': 'svc-gone', 'ah.managed': 'true' };
    const id = await h.engine.createContainer({ name: 'ah-gone-svc', image: TEST_IMAGE, labels, network: 'none' });
    await h.engine.startContainer(id);
    expect(keysOf(await lookForGc(h.deps))).toEqual([]);
    h.advance(601);
    expect(keysOf(await lookForGc(h.deps))).toEqual([`gc-containers:${id.slice(0, 12)}`]);
    expect(h.engine.containers.has(id)).toBe(true);
  });

  it('fails, naming the class and its error, when a class could not observe; what the others found is still found', async () => {
    const h = memoryHost({ gcMinAge: '10m' });
    h.engine.addImage(TEST_IMAGE);
    const labels = { 'ah.tenant': 'gone', 'ah.service': 'svc-gone', 'ah.managed': 'true' };
    const id = await h.engine.createContainer({ name: 'ah-gone-svc', image: TEST_IMAGE, labels, network: 'none' });
    h.advance(601);
    h.engine.fail('volume.list');
    h.engine.fail('network.list');
    expect(await lookForGc(h.deps)).toEqual({
      items: [{ key: `gc-containers:${id.slice(0, 12)}` }],
      failed: 'gc class volumes could not observe (and networks): docker volume.list: ECONNREFUSED: injected by the test',
    });
    h.engine.clearFailures();
    expect((await lookForGc(h.deps)).failed).toBeUndefined();
  });
});

describe("a round's one view of the engine", () => {
  it('is listed once for the three looks, each reading the labels it needs from it, and they find what they did alone', async () => {
    const h = memoryHost({ pooledTemplates: 'default', poolSize: '2', gcMinAge: '10m' });
    const { sid, cid } = await runningService(h, { restartPolicy: 'no' }); // its crash leaves it down
    await tick(h);
    const [gone] = await fullPool(h);
    await h.engine.removeContainer(gone.containerId!, { force: true });
    const orphan = await h.engine.createContainer({ name: 'ah-gone-svc', image: TEST_IMAGE, labels: { 'ah.service': 'svc-gone' } });
    h.advance(601);
    h.engine.die(cid, { restarted: false });
    const alone = [await reconcileLook(h), await lookForPool(h.deps), await lookForGc(h.deps)].map(keysOf);

    const lists = () => h.engine.calls.get('container.list') ?? 0;
    const before = lists();
    const view = new EngineView(h.engine);
    const shared = [
      await lookForReconcile(h.deps, crashPolicy(h.settings), view),
      await lookForPool(h.deps, view),
      await lookForGc(h.deps, view),
    ].map(keysOf);
    expect(lists() - before).toBe(1);
    expect(shared).toEqual(alone);
    const short = orphan.slice(0, 12); // a service container no row names: reconcile reports it, GC removes it
    expect(shared).toEqual([[`crash:${sid}@exited/0`, `split-brain:${short}`], [`pool-gone:${gone.entryId}`], [`gc-containers:${short}`]]);
  });
});
