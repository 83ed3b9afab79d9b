/**
 * gcSweep end to end: the workflow on the CLI dev server, its activities on the real engine and a real
 * SQLite file. One world of orphans of every class next to referenced, in-use, unlabelled and foreign
 * resources; a dry run first, then a real run that must remove exactly what the dry run listed.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GcClass, GcClassResult, GcSweepResult } from '../../src/contracts/gc';
import { lastLoopResults } from '../../src/db/loop-results';
import type { StateDb } from '../../src/db/open';
import type { Settings } from '../../src/settings';
import { taskQueueFor } from '../../src/ids';
import { gcSweep } from '../../src/workflows/gcSweep';
import { EngineFixture, freshDb, tempDir, TEST_IMAGE, testSettings, uniqueId } from '../helpers/fixtures';
import { devServerEnv, keeperWorker } from '../helpers/temporal';
import * as w from './world';
import { TestDockerClient } from '../helpers/test-docker';

const docker = new TestDockerClient();

async function gone(kind: 'container' | 'volume' | 'network', name: string): Promise<boolean> {
  const inspect = {
    container: () => docker.inspectContainer(name),
    volume: () => docker.inspectVolume(name),
    network: () => docker.inspectNetwork(name),
  }[kind];
  try {
    await inspect();
    return false;
  } catch (err) {
    if ((err as { isNotFound?: boolean }).isNotFound) return true;
    throw err;
  }
}

function byClass(r: GcSweepResult, cls: GcClass): GcClassResult {
  return r.classes.find((c) => c.class === cls)!;
}

function names(r: GcSweepResult, cls: GcClass, field: 'planned' | 'removed'): string[] {
  return byClass(r, cls)
    [field].map((i) => i.name)
    .sort();
}

function setAge(dir: string, hoursAgo: number): void {
  const t = new Date(Date.now() - hoursAgo * 3_600_000);
  fs.utimesSync(dir, t, t);
}

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await devServerEnv();
});
afterAll(async () => {
  await env?.teardown();
});

async function sweep(db: StateDb, settings: Settings, dryRun: boolean, client = docker): Promise<GcSweepResult> {
  const worker: Worker = await keeperWorker(env, { db, docker: client, settings });
  return worker.runUntil(
    env.client.workflow.execute(gcSweep, {
      taskQueue: taskQueueFor(settings.hostId),
      workflowId: `gc-test-${uniqueId()}`,
      args: dryRun ? [{ dryRun: true }] : [],
    }),
  );
}

describe('a sweep over a world of every class', () => {
  const fx = new EngineFixture();
  const u = uniqueId('');
  let db: StateDb;
  let settings: Settings;
  let buildDir: string;
  let outside: string;
  const orphan = {
    containers: [] as string[],
    volumes: [`ah-db-${u}`, `ah-env-${u}`, `ah-kanban-${u}`, `ah-pool-${u}`],
    networks: [`ah-tenant-${u}-empty`, `ah-tenant-${u}-traefik-left`],
    image: '',
    buildDir: `build-${u}-old`,
  };
  const kept = {
    containers: [] as string[],
    volumes: [] as string[],
    networks: [] as string[],
    image: '',
  };
  let dry: GcSweepResult;
  let real: GcSweepResult;
  let snaps: Record<string, string>;
  /** Snapshot tags this file put on TEST_IMAGE: afterAll removes every one, whatever retention kept. */
  const madeTags: string[] = [];
  let t: string;
  const records = { over: [] as string[], kept: [] as string[], afterDry: [] as string[] };

  beforeAll(async () => {
    ({ db } = freshDb());
    buildDir = tempDir('keeper-gc-builds-');
    outside = tempDir('keeper-gc-outside-');
    settings = testSettings({
      gcMinAge: '0s',
      buildDir,
      snapshotMaxPerService: '3',
      snapshotMaxAge: '30d',
      crashRecordMaxPerService: '3',
      crashRecordMaxAge: '30d',
    });
    t = w.tenant(db);

    // -- orphan containers of every kind: no row anywhere references them
    const kinds: [string, Record<string, string>, boolean][] = [
      ['svc', { 'ah.service': `s${u}`, 'ah.tenant': t }, false],
      ['db', { 'ah.managed': 'true', 'ah.type': 'database' }, true], // running: stopped, then removed
      ['env', { 'ah.type': 'environment', 'ah.environment': `e${u}` }, false],
      ['kanban', { 'ah.managed': 'true', 'ah.type': 'kanban' }, false],
      ['pool', { 'ah.type': 'warm-pool', 'ah.tenant': 'pool' }, false],
    ];
    for (const [kind, labels, running] of kinds) {
      const name = `ah-${kind}-${u}-orphan`;
      await fx.run({ name, labels, init: true, network: 'none' }, running);
      orphan.containers.push(name);
    }

    // -- referenced containers: each by a different table
    const refd = async (kind: string, labels: Record<string, string>, ref: (id: string) => void) => {
      const name = `ah-${kind}-${u}-ref`;
      const id = await fx.run({ name, labels, init: true, network: 'none' }, false);
      ref(id);
      kept.containers.push(name);
    };
    await refd('svc', { 'ah.service': `s${u}r` }, (id) => w.service(db, t, { containerId: id }));
    await refd('db', { 'ah.type': 'database' }, (id) => w.database(db, t, { containerId: id.slice(0, 12) })); // short id
    await refd('kanban', { 'ah.type': 'kanban' }, (id) => w.kanban(db, { containerId: id }));
    // a claimed pool container: only an environments row references it (W-G2)
    await refd('pool', { 'ah.type': 'warm-pool' }, (id) => w.environment(db, t, { containerId: id }));
    // an unclaimed pool container as ah labels it (ah.type=environment): its warm_pool row protects it
    await refd('env', { 'ah.type': 'environment', 'ah.tenant': 'pool' }, (id) =>
      w.poolRow(db, { containerId: id, volumeName: `ah-pool-${u}-ready` }),
    );
    // -- foreign: no ah label, an ah- name; and an ah kind GC does not collect
    for (const [name, labels] of [
      [`ah-${u}-unlabelled`, {}],
      [`ah-${u}-registry`, { 'ah.type': 'registry' }],
    ] as const) {
      await fx.run({ name, labels, network: 'none' }, false);
      kept.containers.push(name);
    }

    // -- volumes
    for (const v of orphan.volumes) await fx.volume(v);
    const claimed = `ah-pool-${u}-claimed`; // a claimed pool volume: environments.volume_name only (W-G3)
    await fx.volume(claimed);
    w.environment(db, t, { volumeName: claimed });
    await fx.volume(`ah-pool-${u}-ready`); // warm_pool row above
    const dbVol = await fx.volume(`ah-db-${u}-ref`);
    w.database(db, t, { volumeName: dbVol });
    const mounted = await fx.volume(`ah-env-${u}-mounted`); // no row, but a foreign container mounts it
    await fx.run({ name: `keeper-gc-${u}-mounter`, volumes: [{ name: mounted, target: '/w' }], network: 'none' }, false);
    await fx.volume(`ah-other-${u}`); // ah- prefix, not a class GC collects
    await fx.volume(`foreign-${u}`);
    kept.volumes.push(claimed, `ah-pool-${u}-ready`, dbVol, mounted, `ah-other-${u}`, `foreign-${u}`);
    // an orphan container's volume goes in the same sweep, once the container is gone (dry run included)
    const freed = await fx.volume(`ah-env-${u}-freed`);
    const holder = `ah-env-${u}-holder`;
    await fx.run({ name: holder, labels: { 'ah.type': 'environment' }, volumes: [{ name: freed, target: '/w' }], network: 'none' }, false);
    orphan.containers.push(holder);
    orphan.volumes.push(freed);

    // -- networks: attached container (running) and configured container (stopped) keep a network
    for (const n of orphan.networks) await fx.network(n);
    const busy = await fx.network(`ah-tenant-${u}-busy`);
    await fx.run({ name: `ah-svc-${u}-busy`, labels: { 'ah.service': `b${u}` }, network: `ah-tenant-${u}-busy`, init: true }, true);
    w.service(db, t, { containerId: (await docker.inspectContainer(`ah-svc-${u}-busy`)).id });
    await fx.network(`ah-tenant-${u}-stopped`);
    const stoppedId = await fx.run(
      { name: `ah-svc-${u}-stopped`, labels: { 'ah.service': `st${u}` }, network: `ah-tenant-${u}-stopped` },
      false,
    );
    w.service(db, t, { containerId: stoppedId });
    // Traefik joins tenant networks to route to them; alone it does not keep one: it is disconnected first
    const edge = `keeper-gc-${u}-edge`;
    await fx.network(edge);
    const traefik = await fx.run({ name: 'paas-traefik', network: edge, init: true }, true);
    await docker.connectNetwork(`ah-tenant-${u}-traefik-left`, traefik);
    kept.networks.push(edge);
    kept.containers.push('paas-traefik');
    await fx.network(`ah-pool-${u}`);
    await fx.network(`foreign-${u}`);
    kept.networks.push(`ah-tenant-${u}-busy`, `ah-tenant-${u}-stopped`, `ah-pool-${u}`, `foreign-${u}`);
    void busy;

    // -- images
    orphan.image = await w.danglingImage(`ah.build=${u}`);
    kept.image = await w.danglingImage(undefined);

    // -- build dirs: old, young, a symlink to an old directory outside the base, a hidden one
    fs.mkdirSync(path.join(buildDir, orphan.buildDir));
    fs.writeFileSync(path.join(buildDir, orphan.buildDir, 'Dockerfile'), 'FROM scratch\n');
    setAge(path.join(buildDir, orphan.buildDir), 2);
    fs.mkdirSync(path.join(buildDir, `build-${u}-young`));
    fs.writeFileSync(path.join(outside, 'precious'), 'keep me');
    setAge(outside, 5);
    fs.symlinkSync(outside, path.join(buildDir, `build-${u}-link`));
    fs.mkdirSync(path.join(buildDir, '.cache'));
    setAge(path.join(buildDir, '.cache'), 5);

    // -- snapshots: one service with 5 (two of them 60 and 45 days old), limit 3 and 30 days; a service
    //    still runs the image of the oldest one of a second service
    const now = Math.floor(Date.now() / 1000);
    const day = 86_400;
    const s1 = w.service(db, t);
    const s2Image = `127.0.0.1:5000/snapshots/${t}:${u}-s2old`;
    const s2 = w.service(db, t);
    w.service(db, t, { image: s2Image });
    snaps = {};
    const ages: [string, string, number][] = [
      [s1, 'a60d', 60 * day],
      [s1, 'b45d', 45 * day],
      [s1, 'c3d', 3 * day],
      [s1, 'd2d', 2 * day],
      [s1, 'e1d', day],
      [s2, 's2old', 90 * day],
      [s2, 's2new', day],
    ];
    for (const [svc, key, age] of ages) {
      const ref = `127.0.0.1:5000/snapshots/${t}:${u}-${key}`;
      await docker.tagImage(TEST_IMAGE, `127.0.0.1:5000/snapshots/${t}`, `${u}-${key}`);
      madeTags.push(ref);
      snaps[key] = w.snapshot(db, t, svc, { id: `${u}-${key}`, imageRef: ref, createdAt: now - age });
    }

    // -- crash records, limit 3 and 30 days: a service with 5 (two of them recorded in the same second) loses
    //    its 2 oldest by count; another loses its 40-day-old one by age; a third's, 29 days old, stay
    const [c1, c2, c3] = [w.service(db, t), w.service(db, t), w.service(db, t)];
    const oldestTwo = [w.crashRecord(db, c1, now - 5 * day), w.crashRecord(db, c1, now - 4 * day)];
    records.kept.push(w.crashRecord(db, c1, now - 4 * day), w.crashRecord(db, c1, now - 2 * day), w.crashRecord(db, c1, now - day));
    const aged = w.crashRecord(db, c2, now - 40 * day);
    records.kept.push(w.crashRecord(db, c2, now - day), w.crashRecord(db, c3, now - 29 * day), w.crashRecord(db, c3, now - 29 * day));
    records.over.push(...oldestTwo, aged);

    dry = await sweep(db, settings, true);
    records.afterDry = w.crashRecordIds(db);
    real = await sweep(db, settings, false);
  });

  afterAll(async () => {
    await fx.cleanup();
    for (const id of [orphan.image, kept.image])
      await w
        .rawDocker()
        .getImage(id)
        .remove({ force: true })
        .catch(() => undefined);
    // every snapshot tag this file made, the ones retention kept included (untagging never removes TEST_IMAGE itself)
    for (const ref of madeTags.splice(0)) await docker.removeImage(ref).catch(() => undefined);
    db?.close();
  });

  it('removes orphan containers of every kind, running ones included', async () => {
    expect(names(real, 'containers', 'removed')).toEqual(expect.arrayContaining(orphan.containers));
    for (const c of orphan.containers) expect(await gone('container', c), c).toBe(true);
  });

  it('keeps containers referenced by any table (claimed pool included), unlabelled and foreign ones', async () => {
    for (const c of kept.containers) expect(await gone('container', c), c).toBe(false);
    const removed = names(real, 'containers', 'removed');
    for (const c of kept.containers) expect(removed).not.toContain(c);
    expect(byClass(real, 'containers').kept.referenced).toBeGreaterThanOrEqual(5);
  });

  it('removes orphan volumes of the four prefixes, and a volume freed by an orphan container in the same sweep', async () => {
    expect(names(real, 'volumes', 'removed')).toEqual(expect.arrayContaining(orphan.volumes));
    for (const v of orphan.volumes) expect(await gone('volume', v), v).toBe(true);
  });

  it('keeps a claimed pool volume, referenced, mounted, other-prefix and foreign volumes', async () => {
    for (const v of kept.volumes) expect(await gone('volume', v), v).toBe(false);
    const removed = names(real, 'volumes', 'removed');
    for (const v of kept.volumes) expect(removed).not.toContain(v);
  });

  it('removes empty tenant networks and keeps one with a running container, one with a stopped one, ah-pool and foreign', async () => {
    for (const n of orphan.networks) expect(await gone('network', n), n).toBe(true);
    for (const n of kept.networks) expect(await gone('network', n), n).toBe(false);
    expect(byClass(real, 'networks').kept['not-empty']).toBeGreaterThanOrEqual(1);
    expect(byClass(real, 'networks').kept['in-use']).toBeGreaterThanOrEqual(1);
    const traefik = await docker.inspectContainer('paas-traefik');
    expect(traefik.status).toBe('running');
    expect(traefik.networks).toEqual([`keeper-gc-${u}-edge`]);
  });

  it('removes an ah-labelled dangling image and keeps a foreign one', async () => {
    expect(await w.imageExists(orphan.image)).toBe(false);
    expect(await w.imageExists(kept.image)).toBe(true);
  });

  it('removes an old build directory, keeps a young one, and never follows a symlink out of the base', () => {
    expect(fs.existsSync(path.join(buildDir, orphan.buildDir))).toBe(false);
    expect(fs.existsSync(path.join(buildDir, `build-${u}-young`))).toBe(true);
    expect(fs.lstatSync(path.join(buildDir, `build-${u}-link`)).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(path.join(outside, 'precious'), 'utf8')).toBe('keep me');
    expect(fs.existsSync(path.join(buildDir, '.cache'))).toBe(true);
    expect(byClass(real, 'buildDirs').kept.symlink).toBe(1);
  });

  it('applies the snapshot count pass first, then the age pass, and keeps a snapshot whose image a service runs', async () => {
    // 5 for s1 with a limit of 3: the two oldest go by count; the age pass then finds nothing more of s1.
    expect(names(real, 'snapshots', 'removed')).toEqual([snaps.a60d, snaps.b45d].sort());
    expect(byClass(real, 'snapshots').removed.every((i) => /over the limit of 3/.test(i.reason))).toBe(true);
    const left = w.snapshotIds(db);
    expect(left).toEqual(expect.arrayContaining([snaps.c3d, snaps.d2d, snaps.e1d, snaps.s2old, snaps.s2new]));
    expect(left).not.toContain(snaps.a60d);
    expect(byClass(real, 'snapshots').kept['image-in-use']).toBe(1);
    // removing a snapshot untags its image ref
    expect(await docker.imageExists(`127.0.0.1:5000/snapshots/${t}:${snaps.a60d}`)).toBe(false);
    expect(await docker.imageExists(`127.0.0.1:5000/snapshots/${t}:${snaps.c3d}`)).toBe(true);
  });

  it('the dry run removed nothing and listed exactly what the real run then removed, class by class', () => {
    for (const cls of [
      'containers',
      'volumes',
      'networks',
      'images',
      'buildDirs',
      'snapshots',
      'crashRecords',
      'buildImages',
    ] as GcClass[]) {
      expect(byClass(dry, cls).removed, cls).toEqual([]);
      expect(names(dry, cls, 'planned'), cls).toEqual(names(real, cls, 'removed'));
      expect(byClass(real, cls).failed, cls).toEqual([]);
      expect(byClass(real, cls).error, cls).toBeUndefined();
    }
    expect(dry.totals.planned).toBe(real.totals.removed);
    expect(dry.totals.planned).toBeGreaterThanOrEqual(orphan.containers.length + orphan.volumes.length + 8);
  });

  it('removes crash records over the per-service count (oldest first, ties by id) or the age; keeps the rest; the dry run removed none', () => {
    expect(records.afterDry).toEqual([...records.over, ...records.kept].sort((a, b) => Number(a) - Number(b)));
    const removed = byClass(real, 'crashRecords').removed;
    expect(removed.map((i) => i.name.split('#')[1]).sort()).toEqual([...records.over].sort());
    expect(removed.filter((i) => /over the limit of 3 crash records for service/.test(i.reason))).toHaveLength(2);
    expect(removed.filter((i) => i.reason === `older than ${30 * 86_400}s`)).toHaveLength(1);
    expect(w.crashRecordIds(db)).toEqual([...records.kept].sort((a, b) => Number(a) - Number(b)));
    expect(byClass(real, 'crashRecords').kept['within-limits']).toBe(records.kept.length);
  });

  it('logs every removal with class, name, age and reason in the result, and records the sweep', () => {
    for (const c of real.classes)
      for (const i of c.removed)
        expect(i).toMatchObject({ name: expect.any(String), ageSeconds: expect.any(Number), reason: expect.any(String) });
    const recorded = lastLoopResults(db).find((r) => r.loop === 'gc');
    expect(recorded?.result).toMatchObject({ totals: { removed: real.totals.removed } });
    expect(recorded?.workflowId).toMatch(/^gc-test-/);
  });
});

describe('the age guard', () => {
  const fx = new EngineFixture();
  afterAll(() => fx.cleanup());

  it('keeps young orphan containers, volumes and networks (default 10m guard)', async () => {
    const { db } = freshDb();
    const u = uniqueId('');
    await fx.run({ name: `ah-svc-${u}-young`, labels: { 'ah.service': u }, network: 'none' }, false);
    await fx.volume(`ah-db-${u}-young`);
    await fx.network(`ah-tenant-${u}-young`);
    const r = await sweep(db, testSettings({ buildDir: tempDir() }), false);
    expect(await gone('container', `ah-svc-${u}-young`)).toBe(false);
    expect(await gone('volume', `ah-db-${u}-young`)).toBe(false);
    expect(await gone('network', `ah-tenant-${u}-young`)).toBe(false);
    for (const cls of ['containers', 'volumes', 'networks'] as GcClass[]) {
      expect(byClass(r, cls).kept.young, cls).toBeGreaterThanOrEqual(1);
      expect(names(r, cls, 'removed'), cls).not.toEqual(expect.arrayContaining([expect.stringContaining(u)]));
    }
    db.close();
  });
});
