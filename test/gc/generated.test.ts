/**
 * Generated worlds (seeded, reproducible): random mixes of ah and foreign containers, volumes and tenant
 * networks, random rows of every table referencing some of them, random ages and mounts. Each world's
 * expected orphans come from how it was generated (an oracle written apart from the policy code), and each
 * sweep must remove exactly those: nothing referenced, young, in use or foreign, and every true orphan.
 *
 * Most worlds go through the real SQL reference query and the pure planners (fast); a few are built on the
 * real engine and swept by the real activities, dry run first. On the engine every resource is "old"
 * (gc-min-age 0s), because real resources cannot be aged; the age dimension is covered by the planner worlds.
 */
import crypto from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createGcActivities } from '../../src/activities/gc';
import { TRAEFIK_CONTAINER } from '../../src/names';
import { loadGcReferences } from '../../src/db/gc';
import type { StateDb } from '../../src/db/open';
import type { Logger } from '../../src/log';
import { planContainers, planNetworks, planVolumes, type ContainerObs, type NetworkObs } from '../../src/policy/gc';
import { EngineFixture, freshDb, tempDir, testDeps, testSettings, uniqueId } from '../helpers/fixtures';
import * as w from './world';
import { rng, type Rng } from '../helpers/rng';

const CONTAINER_KINDS = ['service', 'database', 'environment', 'kanban', 'warm-pool', 'unlabelled', 'registry', 'managed-only'] as const;
const AH_KINDS = new Set(['service', 'database', 'environment', 'kanban', 'warm-pool']);
const CONTAINER_REF_TABLES = ['none', 'none', 'none', 'services', 'databases', 'environments', 'kanbans', 'warm_pool'] as const;
const VOLUME_PREFIXES = ['ah-db-', 'ah-env-', 'ah-kanban-', 'ah-pool-', 'ah-other-', 'foreign-', 'x-ah-db-'] as const;
const AH_VOLUME_PREFIXES = new Set(['ah-db-', 'ah-env-', 'ah-kanban-', 'ah-pool-']);
const VOLUME_REF_TABLES = ['none', 'none', 'none', 'databases', 'environments', 'kanbans', 'warm_pool'] as const;
const NETWORK_PREFIXES = ['ah-tenant-', 'ah-tenant-', 'ah-pool-', 'tenant-'] as const;

interface GenContainer {
  name: string;
  kind: (typeof CONTAINER_KINDS)[number];
  ref: (typeof CONTAINER_REF_TABLES)[number];
  refForm: 'full' | 'prefix12' | 'name';
  young: boolean;
  running: boolean;
  network?: number; // index into networks
  mounts: number[]; // indexes into volumes
}
interface GenVolume {
  name: string;
  prefix: (typeof VOLUME_PREFIXES)[number];
  ref: (typeof VOLUME_REF_TABLES)[number];
  young: boolean;
}
interface GenNetwork {
  name: string;
  prefix: (typeof NETWORK_PREFIXES)[number];
  young: boolean;
  traefik: boolean; // Traefik attached (planner worlds only)
}
interface World {
  containers: GenContainer[];
  volumes: GenVolume[];
  networks: GenNetwork[];
}

function generate(r: Rng, tag: string, opts: { ages: boolean; max: number }): World {
  const networks: GenNetwork[] = Array.from({ length: r.int(4) }, (_, i) => ({
    name: `${r.pick(NETWORK_PREFIXES)}${tag}-n${i}`,
    prefix: 'ah-tenant-',
    young: opts.ages && r.chance(0.25),
    traefik: r.chance(0.3),
  }));
  for (const n of networks) n.prefix = NETWORK_PREFIXES.find((p) => n.name.startsWith(p))!;
  const volumes: GenVolume[] = Array.from({ length: r.int(opts.max) }, (_, i) => {
    const prefix = r.pick(VOLUME_PREFIXES);
    return { name: `${prefix}${tag}-v${i}`, prefix, ref: r.pick(VOLUME_REF_TABLES), young: opts.ages && r.chance(0.25) };
  });
  const containers: GenContainer[] = Array.from({ length: r.int(opts.max) }, (_, i) => {
    const kind = r.pick(CONTAINER_KINDS);
    return {
      name: `ah-${kind}-${tag}-c${i}`,
      kind,
      ref: r.pick(CONTAINER_REF_TABLES),
      refForm: r.pick(['full', 'full', 'prefix12', 'name'] as const),
      young: opts.ages && r.chance(0.25),
      running: r.chance(0.2),
      network: networks.length > 0 && r.chance(0.4) ? r.int(networks.length) : undefined,
      mounts: volumes.length > 0 && r.chance(0.3) ? [r.int(volumes.length)] : [],
    };
  });
  // one container per volume: Docker allows more, but this keeps the engine worlds simple
  const taken = new Set<number>();
  for (const c of containers) c.mounts = c.mounts.filter((m) => !taken.has(m) && taken.add(m));
  return { containers, volumes, networks };
}

/** The oracle: what a sweep must remove, from how the world was generated. */
function expectedOrphans(wd: World) {
  const containers = new Set(wd.containers.filter((c) => AH_KINDS.has(c.kind) && c.ref === 'none' && !c.young).map((c) => c.name));
  const staying = wd.containers.filter((c) => !containers.has(c.name));
  const mountedByStaying = new Set(staying.flatMap((c) => c.mounts.map((m) => wd.volumes[m].name)));
  const volumes = new Set(
    wd.volumes
      .filter((v) => AH_VOLUME_PREFIXES.has(v.prefix) && v.ref === 'none' && !v.young && !mountedByStaying.has(v.name))
      .map((v) => v.name),
  );
  const usedNetworks = new Set(staying.flatMap((c) => (c.network !== undefined ? [wd.networks[c.network].name] : [])));
  const networks = new Set(
    wd.networks.filter((n) => n.prefix === 'ah-tenant-' && !n.young && !usedNetworks.has(n.name)).map((n) => n.name),
  );
  return { containers, volumes, networks };
}

function labelsOf(kind: GenContainer['kind'], tag: string): Record<string, string> {
  if (kind === 'service') return { 'ah.service': tag, 'ah.tenant': 't' };
  if (kind === 'unlabelled') return {};
  if (kind === 'registry') return { 'ah.type': 'registry' };
  if (kind === 'managed-only') return { 'ah.managed': 'true' };
  return { 'ah.type': kind, 'ah.managed': 'true' };
}

/** Writes the world's reference rows into the real ah tables. */
function writeRows(db: StateDb, wd: World, ids: Map<string, string>): void {
  const t = w.tenant(db);
  for (const c of wd.containers) {
    if (c.ref === 'none') continue;
    const id = ids.get(c.name)!;
    const ref = c.refForm === 'full' ? id : c.refForm === 'prefix12' ? id.slice(0, 12) : c.name;
    if (c.ref === 'services') w.service(db, t, { containerId: ref });
    else if (c.ref === 'databases') w.database(db, t, { containerId: ref });
    else if (c.ref === 'environments') w.environment(db, t, { containerId: ref });
    else if (c.ref === 'kanbans') w.kanban(db, { containerId: ref });
    else w.poolRow(db, { containerId: ref, volumeName: 'x' });
  }
  for (const v of wd.volumes) {
    if (v.ref === 'databases') w.database(db, t, { volumeName: v.name });
    else if (v.ref === 'environments') w.environment(db, t, { volumeName: v.name });
    else if (v.ref === 'kanbans') w.kanban(db, { volumeName: v.name });
    else if (v.ref === 'warm_pool') w.poolRow(db, { containerId: 'x', volumeName: v.name });
  }
}

function clearRows(db: StateDb): void {
  db.exec(
    'DELETE FROM snapshots; DELETE FROM services; DELETE FROM databases; DELETE FROM environments; DELETE FROM kanbans; DELETE FROM warm_pool; DELETE FROM tenants;',
  );
}

const sorted = (s: Iterable<string>) => [...s].sort();

describe('generated worlds through the reference query and the planners', () => {
  const CASES = 300;
  it(`${CASES} seeded worlds: exactly the true orphans are planned, never anything referenced, young, in use or foreign`, () => {
    const { db } = freshDb();
    const NOW = 1_800_000_000;
    const guard = { now: NOW, minAgeSeconds: 600 };
    let orphansSeen = 0;
    let keptSeen = 0;
    for (let seed = 1; seed <= CASES; seed++) {
      const r = rng(seed);
      const wd = generate(r, `s${seed}`, { ages: true, max: 12 });
      const ids = new Map(wd.containers.map((c) => [c.name, crypto.createHash('sha256').update(c.name).digest('hex')]));
      clearRows(db);
      writeRows(db, wd, ids);
      const refs = loadGcReferences(db);
      const createdAt = (young: boolean) => (young ? NOW - r.int(600) : NOW - 600 - r.int(86_400));
      const cobs: ContainerObs[] = wd.containers.map((c) => ({
        id: ids.get(c.name)!,
        name: c.name,
        labels: labelsOf(c.kind, 'x'),
        state: c.running ? 'running' : 'exited',
        createdAt: createdAt(c.young),
      }));
      const cplan = planContainers(cobs, refs, guard);
      const gone = new Set(cplan.remove.map((p) => p.target.name));
      const staying = wd.containers.filter((c) => !gone.has(c.name));
      const inUse = new Set(staying.flatMap((c) => c.mounts.map((m) => wd.volumes[m].name)));
      const vplan = planVolumes(
        wd.volumes.map((v) => ({ name: v.name, createdAt: createdAt(v.young) })),
        refs,
        inUse,
        guard,
      );
      const nobs: NetworkObs[] = wd.networks.map((n, i) => ({
        id: n.name,
        name: n.name,
        createdAt: createdAt(n.young),
        attached: [...(n.traefik ? [TRAEFIK_CONTAINER] : []), ...staying.filter((c) => c.network === i && c.running).map((c) => c.name)],
        configuredOn: staying.filter((c) => c.network === i).map((c) => c.name),
      }));
      const nplan = planNetworks(nobs, guard);

      const want = expectedOrphans(wd);
      const ctx = `seed ${seed}`;
      expect(sorted(gone), ctx).toEqual(sorted(want.containers));
      expect(sorted(vplan.remove.map((p) => p.item.name)), ctx).toEqual(sorted(want.volumes));
      expect(sorted(nplan.remove.map((p) => p.item.name)), ctx).toEqual(sorted(want.networks));
      orphansSeen += want.containers.size + want.volumes.size + want.networks.size;
      keptSeen +=
        wd.containers.length + wd.volumes.length + wd.networks.length - (want.containers.size + want.volumes.size + want.networks.size);
    }
    // the generator really exercised both sides
    expect(orphansSeen).toBeGreaterThan(300);
    expect(keptSeen).toBeGreaterThan(1000);
    db.close();
  });
});

describe('generated worlds on the real engine', () => {
  const fx = new EngineFixture();
  afterAll(() => fx.cleanup());
  const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

  for (const seed of [101, 202, 303, 404, 505]) {
    it(`seed ${seed}: the dry run and the real sweep remove exactly the true orphans`, async () => {
      const r = rng(seed);
      const tag = uniqueId(`g${seed}`);
      const wd = generate(r, tag, { ages: false, max: 8 });
      const { db } = freshDb();
      const settings = testSettings({ gcMinAge: '0s', buildDir: tempDir() });
      const gc = createGcActivities(testDeps({ db, docker: fx.docker, settings, log: silent }));

      for (const n of wd.networks) await fx.network(n.name);
      for (const v of wd.volumes) await fx.volume(v.name);
      const ids = new Map<string, string>();
      for (const c of wd.containers) {
        const id = await fx.run(
          {
            name: c.name,
            labels: labelsOf(c.kind, tag),
            init: true,
            network: c.network !== undefined ? wd.networks[c.network].name : 'none',
            volumes: c.mounts.map((m) => ({ name: wd.volumes[m].name, target: '/w' })),
          },
          c.running,
        );
        ids.set(c.name, id);
      }
      writeRows(db, wd, ids);
      const want = expectedOrphans(wd);
      const mine = (names: string[], all: Set<string>) => sorted(names.filter((n) => all.has(n)));
      const allC = new Set(wd.containers.map((c) => c.name));
      const allV = new Set(wd.volumes.map((v) => v.name));
      const allN = new Set(wd.networks.map((n) => n.name));

      const dc = await gc.removeOrphanContainers({ dryRun: true });
      const gone = dc.planned.flatMap((i) => (i.id ? [i.id] : []));
      const dv = await gc.removeOrphanVolumes({ dryRun: true, goneContainers: gone });
      const dn = await gc.removeEmptyTenantNetworks({ dryRun: true, goneContainers: gone });
      expect(
        mine(
          dc.planned.map((i) => i.name),
          allC,
        ),
      ).toEqual(sorted(want.containers));
      expect(
        mine(
          dv.planned.map((i) => i.name),
          allV,
        ),
      ).toEqual(sorted(want.volumes));
      expect(
        mine(
          dn.planned.map((i) => i.name),
          allN,
        ),
      ).toEqual(sorted(want.networks));

      const rc = await gc.removeOrphanContainers({ dryRun: false });
      const removed = rc.removed.flatMap((i) => (i.id ? [i.id] : []));
      const rv = await gc.removeOrphanVolumes({ dryRun: false, goneContainers: removed });
      const rn = await gc.removeEmptyTenantNetworks({ dryRun: false, goneContainers: removed });
      expect(
        mine(
          rc.removed.map((i) => i.name),
          allC,
        ),
      ).toEqual(sorted(want.containers));
      expect(
        mine(
          rv.removed.map((i) => i.name),
          allV,
        ),
      ).toEqual(sorted(want.volumes));
      expect(
        mine(
          rn.removed.map((i) => i.name),
          allN,
        ),
      ).toEqual(sorted(want.networks));
      for (const res of [rc, rv, rn])
        expect(res.failed.filter((f) => allC.has(f.name) || allV.has(f.name) || allN.has(f.name))).toEqual([]);

      // and the engine agrees: every kept resource of this world is still there, every orphan is gone
      const present = {
        c: new Set((await fx.docker.listContainerUsage()).map((c) => c.name)),
        v: new Set((await fx.docker.listVolumes()).map((v) => v.name)),
        n: new Set((await fx.docker.listNetworks()).map((n) => n.name)),
      };
      for (const c of allC) expect(present.c.has(c), c).toBe(!want.containers.has(c));
      for (const v of allV) expect(present.v.has(v), v).toBe(!want.volumes.has(v));
      for (const n of allN) expect(present.n.has(n), n).toBe(!want.networks.has(n));
      db.close();
    });
  }
});
