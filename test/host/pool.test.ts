/**
 * The warm pool's refill and claim (host/pool) on an in-memory engine, a test double (see
 * test/helpers/memory-engine.ts), with a real SQLite state DB: what a refill plans, creates, adopts, prunes and
 * replaces, and how a claim moves a pool container or falls back to a cold create. test/pool/ runs them on a real engine.
 */
import { describe, expect, it } from 'vitest';
import { claimEnvironment } from '../../src/host/pool/claim';
import { imagePull } from '../../src/db/image-pulls';
import { ImagePulls } from '../../src/host/pool/pull';
import { createPoolEntry, detachClaimedFromPool, planPoolRefill, PoolEntryRefused, prunePoolGhosts } from '../../src/host/pool/refill';
import { POOL_NETWORK, poolContainerName, poolVolumeName } from '../../src/names';
import { uniqueId } from '../helpers/fixtures';
import { addTenant } from '../reconcile/rows';
import { memoryHost, type MemoryHost } from './world';

const DEFAULT_IMAGE = 'ubuntu:24.04'; // tmpl_default's base image, as ah's schema seeds it

function poolHost(): MemoryHost {
  const h = memoryHost({ pooledTemplates: 'default,node', poolSize: '2' });
  h.engine.addImage(DEFAULT_IMAGE);
  return h;
}

const entry = (templateId = 'tmpl_default') => ({ entryId: uniqueId('wp'), templateId });
const poolRows = (h: MemoryHost) => h.db.prepare('SELECT id, status FROM warm_pool ORDER BY id').all() as { id: string; status: string }[];

describe('pool refill (in-memory engine)', () => {
  it('plans the pooled templates whose image the engine has, and reports the others as missing', async () => {
    const h = poolHost();
    const plan = await planPoolRefill(h.deps);
    expect(plan.steps).toEqual([{ templateId: 'tmpl_default', count: 2 }]);
    expect(plan.missingImages).toEqual([expect.objectContaining({ templateId: 'tmpl_node', image: 'node:22-bookworm' })]);
    h.engine.fail('image.inspect', { status: 500 });
    expect((await planPoolRefill(h.deps)).imagesUnchecked).toEqual(['tmpl_default', 'tmpl_node']);
  });

  it('creates an entry once: volume, confined container on an isolating ah-pool, started, then its row', async () => {
    const h = poolHost();
    const req = entry();
    const made = await createPoolEntry(h.deps, req);
    expect(made).toMatchObject({ outcome: 'created', containerId: expect.any(String) });
    const c = h.engine.container(made.containerId!);
    expect(c).toMatchObject({ name: poolContainerName(req.entryId), state: 'running', runtime: 'runc', image: DEFAULT_IMAGE });
    expect([...c.networks]).toEqual([POOL_NETWORK]);
    expect(await h.engine.inspectNetwork(POOL_NETWORK)).toMatchObject({
      internal: true,
      options: { 'com.docker.network.bridge.enable_icc': 'false' },
    });
    expect(h.engine.volumes.has(poolVolumeName(req.entryId))).toBe(true);
    expect(poolRows(h)).toEqual([{ id: req.entryId, status: 'ready' }]);
    expect(await createPoolEntry(h.deps, req)).toMatchObject({ outcome: 'exists' });
    expect(h.engine.calls.get('container.create')).toBe(1);
  });

  it('a retry adopts its own container by name (409); a name another entry holds is refused and that container stays', async () => {
    const h = poolHost();
    const req = entry();
    const own = await h.engine.createContainer({
      name: poolContainerName(req.entryId),
      image: DEFAULT_IMAGE,
      labels: { 'ah.pool-entry': req.entryId },
    });
    expect(await createPoolEntry(h.deps, req)).toMatchObject({ outcome: 'created', containerId: own });

    const taken = entry();
    const other = await h.engine.createContainer({
      name: poolContainerName(taken.entryId),
      image: DEFAULT_IMAGE,
      labels: { 'ah.pool-entry': 'someone-else' },
    });
    const refused = await createPoolEntry(h.deps, taken).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PoolEntryRefused);
    expect(refused).toMatchObject({ reason: 'NameTaken' });
    expect(h.engine.container(other).name).toBe(poolContainerName(taken.entryId));
    expect(h.engine.volumes.has(poolVolumeName(taken.entryId))).toBe(false);
  });

  it('a transient create failure leaves nothing behind, so the retry starts from the same names', async () => {
    const h = poolHost();
    const req = entry();
    h.engine.fail('container.start', { status: 500, times: 1 });
    await expect(createPoolEntry(h.deps, req)).rejects.toThrow(/HTTP 500/);
    expect(h.engine.containers.size).toBe(0);
    expect(h.engine.volumes.size).toBe(0);
    expect(poolRows(h)).toEqual([]);
    expect(await createPoolEntry(h.deps, req)).toMatchObject({ outcome: 'created' });
  });

  it('prunes a ghost (404), keeps a row it could not inspect (transient), and replaces one under another runtime', async () => {
    const h = poolHost();
    const [ghost, unsure, foreignRuntime, fine] = [entry(), entry(), entry(), entry('tmpl_node')];
    h.engine.addImage('node:22-bookworm');
    const made = await Promise.all([ghost, unsure, foreignRuntime, fine].map((r) => createPoolEntry(h.deps, r)));
    await h.engine.removeContainer(made[0].containerId!, { force: true });
    h.engine.fail('container.inspect', { status: 500, ref: made[1].containerId });
    h.engine.container(made[2].containerId!).runtime = 'runsc';

    const report = await prunePoolGhosts(h.deps);
    expect(report).toMatchObject({ checked: 4, pruned: [ghost.entryId], replaced: [{ id: foreignRuntime.entryId, runtime: 'runsc' }] });
    expect(report.kept).toEqual([{ id: unsure.entryId, error: expect.stringContaining('HTTP 500') }]);
    expect(
      poolRows(h)
        .map((r) => r.id)
        .sort(),
    ).toEqual([unsure.entryId, fine.entryId].sort());
    expect(h.engine.volumes.has(poolVolumeName(ghost.entryId))).toBe(false);
    expect(h.engine.containers.has(made[2].containerId!)).toBe(false);
    expect(h.engine.volumes.has(poolVolumeName(foreignRuntime.entryId))).toBe(false);
    expect(h.engine.containers.has(made[1].containerId!)).toBe(true);
  });
});

describe('claim (in-memory engine)', () => {
  const claim = (h: MemoryHost, tenant: string, name = 'dev') =>
    claimEnvironment({ db: h.db, docker: h.engine, tenantRuntime: 'runc', clock: h.deps.clock }, { tenant, name });

  it('warm: takes the ready entry, moves its container to the tenant network under its environment name; the refill detaches it from ah-pool', async () => {
    const h = poolHost();
    const tenant = addTenant(h.db);
    const req = entry();
    const { containerId } = await createPoolEntry(h.deps, req);
    const r = await claim(h, tenant);
    expect(r).toMatchObject({
      mode: 'warm',
      containerId,
      poolEntry: req.entryId,
      poolDetach: 'deferred',
      volume: poolVolumeName(req.entryId),
    });
    const c = h.engine.container(containerId!);
    expect(c.name).toBe(r.containerName);
    expect([...c.networks].sort()).toEqual([POOL_NETWORK, `ah-tenant-${tenant}`]);
    expect(await detachClaimedFromPool(h.deps)).toMatchObject({ detached: [containerId] });
    expect([...c.networks]).toEqual([`ah-tenant-${tenant}`]);
    expect(h.db.prepare('SELECT status, container_id FROM environments WHERE id = ?').get(r.envId)).toEqual({
      status: 'running',
      container_id: containerId,
    });
  });

  it('cold: with no ready entry it creates the container and volume itself', async () => {
    const h = poolHost();
    const tenant = addTenant(h.db);
    const r = await claim(h, tenant);
    expect(r).toMatchObject({ mode: 'cold', volume: `ah-env-${r.envId}` });
    expect(h.engine.container(r.containerId)).toMatchObject({ name: r.containerName, state: 'running', runtime: 'runc' });
    expect([...h.engine.container(r.containerId).networks]).toEqual([`ah-tenant-${tenant}`]);
  });

  it('a warm move that fails falls back to cold: the pool container and volume go, and so does their row', async () => {
    const h = poolHost();
    const tenant = addTenant(h.db);
    const req = entry();
    const { containerId } = await createPoolEntry(h.deps, req);
    h.engine.fail('network.connect', { status: 500, times: 1 });
    const r = await claim(h, tenant);
    expect(r).toMatchObject({ mode: 'cold', fallbackReason: expect.stringContaining(`pool entry ${req.entryId} could not be moved`) });
    expect(h.engine.containers.has(containerId!)).toBe(false);
    expect(h.engine.volumes.has(poolVolumeName(req.entryId))).toBe(false);
    expect(poolRows(h)).toEqual([]);
  });
});

describe('template image pulls (in-memory engine; the real registry is test/pool/pull.test.ts)', () => {
  const NODE_IMAGE = 'node:22-bookworm';

  it('the plan starts the pull of an absent image and goes on without it; once pulled, a refill is asked for and the next plan pools it', async () => {
    const h = poolHost();
    h.engine.publish(NODE_IMAGE);
    const asked: string[] = [];
    const pulls = new ImagePulls(h.deps, async (why) => void asked.push(why));
    const first = await planPoolRefill(h.deps, pulls);
    expect(first.steps).toEqual([{ templateId: 'tmpl_default', count: 2 }]);
    expect(first.missingImages).toEqual([
      expect.objectContaining({ templateId: 'tmpl_node', pull: expect.objectContaining({ state: 'pulling', attempts: 1 }) }),
    ]);
    await pulls.settled();
    expect(asked).toEqual([`image ${NODE_IMAGE} pulled`]);
    const next = await planPoolRefill(h.deps, pulls);
    expect(next.steps).toEqual([
      { templateId: 'tmpl_default', count: 2 },
      { templateId: 'tmpl_node', count: 2 },
    ]);
    expect(next.missingImages).toEqual([]);
    expect(h.engine.calls.get('image.pull')).toBe(1);
  });

  it('a failed pull waits for its backoff (1 min, then 2 min), never pulled again in between', async () => {
    const h = poolHost();
    const pulls = new ImagePulls(h.deps, async () => undefined);
    await planPoolRefill(h.deps, pulls);
    await pulls.settled();
    expect(imagePull(h.db, NODE_IMAGE)).toMatchObject({
      state: 'failed',
      attempts: 1,
      nextTryAt: h.nowSec() + 60,
      error: expect.stringContaining('manifest unknown'),
    });
    h.advance(59);
    expect((await planPoolRefill(h.deps, pulls)).missingImages?.[0].pull).toMatchObject({ state: 'failed', attempts: 1 });
    expect(h.engine.calls.get('image.pull')).toBe(1);
    h.advance(1);
    await planPoolRefill(h.deps, pulls);
    await pulls.settled();
    expect(imagePull(h.db, NODE_IMAGE)).toMatchObject({ state: 'failed', attempts: 2, nextTryAt: h.nowSec() + 120 });
    expect(h.engine.calls.get('image.pull')).toBe(2);
  });
});
