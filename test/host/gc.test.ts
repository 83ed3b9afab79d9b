/**
 * The GC classes (host/gc/classes) on an in-memory engine, a test double (see test/helpers/memory-engine.ts), with a
 * real SQLite state DB: ownership (never what is not ah's), references from any table, use, and the age guard.
 * test/gc/ runs the same classes on a real engine.
 */
import { describe, expect, it } from 'vitest';
import { buildImages } from '../../src/host/gc/classes/build-images';
import { containers } from '../../src/host/gc/classes/containers';
import { images } from '../../src/host/gc/classes/images';
import { networks } from '../../src/host/gc/classes/networks';
import { volumes } from '../../src/host/gc/classes/volumes';
import { TEST_IMAGE, uniqueId } from '../helpers/fixtures';
import { environment, service, tenant } from '../gc/world';
import { memoryHost, type MemoryHost } from './world';

const OLD_SEC = 3600; // past the default --gc-min-age (10 min)
const names = (items: { name: string }[]) => items.map((i) => i.name).sort();

async function container(
  h: MemoryHost,
  name: string,
  labels: Record<string, string>,
  opts: { network?: string; volume?: string; start?: boolean } = {},
) {
  const id = await h.engine.createContainer({
    name,
    image: TEST_IMAGE,
    labels,
    network: opts.network ?? 'none',
    volumes: opts.volume ? [{ name: opts.volume, target: '/data' }] : undefined,
  });
  if (opts.start ?? true) await h.engine.startContainer(id);
  return id;
}

describe('GC classes (in-memory engine)', () => {
  it('containers: removes only old, unreferenced ah containers; a running one is stopped first', async () => {
    const h = memoryHost();
    h.engine.addImage(TEST_IMAGE);
    const t = tenant(h.db);
    const orphan = await container(h, uniqueId('ah-orphan-'), { 'ah.service': 'gone', 'ah.tenant': t });
    const pool = await container(h, uniqueId('ah-env-pool-'), { 'ah.type': 'warm-pool' }, { start: false });
    const referenced = await container(h, uniqueId('ah-ref-'), { 'ah.service': 'x' });
    service(h.db, t, { containerId: referenced.slice(0, 12) });
    const envRef = await container(h, uniqueId('ah-env-'), { 'ah.type': 'environment' });
    environment(h.db, t, { containerId: envRef });
    await container(h, 'someone-elses', { 'com.example': 'x' });
    await container(h, 'traefik-like', { 'ah.type': 'proxy' });
    h.advance(OLD_SEC);
    await container(h, uniqueId('ah-young-'), { 'ah.service': 'young' });

    const dry = await containers.run(h.deps, { dryRun: true });
    expect(dry.planned.map((p) => p.id).sort()).toEqual([orphan, pool].sort());
    expect(h.engine.containers.size).toBe(7);
    const real = await containers.run(h.deps, { dryRun: false });
    expect(real.removed.map((p) => p.id).sort()).toEqual([orphan, pool].sort());
    expect(real.kept).toEqual({ foreign: 2, referenced: 2, young: 1 });
    expect([...h.engine.containers.keys()]).not.toContain(orphan);
    expect(h.engine.calls.get('container.stop')).toBe(1); // the running orphan only; the created one is removed as it is
  });

  it('volumes: removes old, unreferenced ah- volumes that no staying container mounts', async () => {
    const h = memoryHost();
    h.engine.addImage(TEST_IMAGE);
    const t = tenant(h.db);
    for (const v of ['ah-env-orphan', 'ah-pool-orphan', 'ah-db-mounted', 'ah-env-referenced', 'ah-other-prefix', 'mydata'])
      await h.engine.createVolume(v);
    await container(h, 'ah-db-x', { 'ah.type': 'database' }, { volume: 'ah-db-mounted', start: false });
    h.db
      .prepare(
        `INSERT INTO databases (id, tenant_id, name, type, status, container_id, password_encrypted, created_at, updated_at)
      VALUES ('d1', ?, 'pg', 'postgres', 'ready', 'ah-db-x', 'x', 1, 1)`,
      )
      .run(t);
    environment(h.db, t, { volumeName: 'ah-env-referenced' });
    h.advance(OLD_SEC);
    await h.engine.createVolume('ah-env-young');

    const result = await volumes.run(h.deps, { dryRun: false });
    expect(names(result.removed)).toEqual(['ah-env-orphan', 'ah-pool-orphan']);
    expect(result.kept).toEqual({ foreign: 1, referenced: 1, 'in-use': 1, young: 1 }); // `mydata` is not even listed
    expect([...h.engine.volumes.keys()].sort()).toEqual([
      'ah-db-mounted',
      'ah-env-referenced',
      'ah-env-young',
      'ah-other-prefix',
      'mydata',
    ]);
  });

  it('networks: removes old, empty ah-tenant- networks, with traefik detached; a stopped container configured on one keeps it', async () => {
    const h = memoryHost();
    h.engine.addImage(TEST_IMAGE);
    for (const n of ['ah-tenant-empty', 'ah-tenant-traefik', 'ah-tenant-running', 'ah-tenant-stopped', 'other-net'])
      await h.engine.ensureNetwork(n);
    await container(h, 'paas-traefik', {}, { network: 'ah-tenant-traefik' });
    await container(h, 'ah-a-s1', { 'ah.service': 's1' }, { network: 'ah-tenant-running' });
    await container(h, 'ah-a-s2', { 'ah.service': 's2' }, { network: 'ah-tenant-stopped', start: false });
    h.advance(OLD_SEC);
    await h.engine.ensureNetwork('ah-tenant-young');

    const result = await networks.run(h.deps, { dryRun: false });
    expect(names(result.removed)).toEqual(['ah-tenant-empty', 'ah-tenant-traefik']);
    expect(result.kept).toEqual({ 'not-empty': 1, 'in-use': 1, young: 1 });
    expect(h.engine.container('paas-traefik').networks.size).toBe(0);
    expect(names(await h.engine.listNetworks('ah-tenant-'))).toEqual(['ah-tenant-running', 'ah-tenant-stopped', 'ah-tenant-young']);
  });

  it('a network that cannot be inspected (transient) is skipped, never judged empty', async () => {
    const h = memoryHost();
    await h.engine.ensureNetwork('ah-tenant-a');
    h.advance(OLD_SEC);
    h.engine.fail('network.inspect', { status: 500 });
    const result = await networks.run(h.deps, { dryRun: false });
    expect(result).toMatchObject({ removed: [], skipped: [{ name: 'ah-tenant-a', error: expect.stringContaining('HTTP 500') }] });
    expect(names(await h.engine.listNetworks('ah-tenant-'))).toEqual(['ah-tenant-a']);
  });

  it('images: removes old dangling images with an ah. label that no staying container uses', async () => {
    const h = memoryHost();
    const ours = h.engine.addImage(null, { labels: { 'ah.build': '1' } });
    const used = h.engine.addImage(null, { labels: { 'ah.build': '2' } });
    h.engine.addImage(null, { labels: { 'org.example': 'x' } });
    await h.engine.createContainer({ name: 'user-of-2', image: used, network: 'none' });
    h.advance(OLD_SEC);
    h.engine.addImage(null, { labels: { 'ah.build': '3' } });
    const result = await images.run(h.deps, { dryRun: false });
    expect(result.removed.map((r) => r.name)).toEqual([ours.replace('sha256:', '').slice(0, 12)]);
    expect(h.engine.images.has(ours)).toBe(false);
    expect(result.kept).toEqual({ foreign: 1, 'in-use': 1, young: 1 });
  });

  it('an engine that does not answer its lists skips the class: nothing is judged an orphan', async () => {
    for (const status of [500, undefined]) {
      const h = memoryHost();
      h.engine.addImage(TEST_IMAGE);
      await container(h, 'ah-x-orphan', { 'ah.service': 'gone' });
      await h.engine.createVolume('ah-env-orphan');
      h.advance(OLD_SEC);
      h.engine.fail('container.list', { status });
      const results = [await containers.run(h.deps, { dryRun: false }), await volumes.run(h.deps, { dryRun: false })];
      for (const r of results) expect(r).toMatchObject({ removed: [], error: expect.stringContaining('container.list') });
      expect(h.engine.containers.size).toBe(1);
      expect(h.engine.volumes.size).toBe(1);
    }
  });

  it('build images: keeps the newest --build-images-per-service tags of a service, and any a container uses or no service owns', async () => {
    const h = memoryHost({ buildImagesPerService: '1' });
    const t = tenant(h.db);
    const s1 = service(h.db, t);
    const repo = `127.0.0.1:5000/ah/${t}-${s1}`;
    const oldest = h.engine.addImage(`${repo}:b1`);
    h.advance(10);
    const middle = h.engine.addImage(`${repo}:b2`);
    h.advance(10);
    h.engine.addImage(`${repo}:b3`);
    h.engine.addImage(`127.0.0.1:5000/ah/${t}-nobody:x1`);
    await h.engine.createContainer({ name: uniqueId('ah-old-'), image: `${repo}:b1`, labels: {}, network: 'none' });
    h.advance(OLD_SEC);

    const real = await buildImages.run(h.deps, { dryRun: false });
    expect(names(real.removed)).toEqual([`${repo}:b2`]);
    expect(real.kept).toEqual({ 'image-in-use': 1, 'within-limits': 1, unattributed: 1 });
    expect(h.engine.images.has(middle)).toBe(false);
    expect(h.engine.images.has(oldest)).toBe(true);
  });
});
