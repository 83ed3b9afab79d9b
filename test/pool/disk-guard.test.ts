/**
 * The disk guard on this machine's real filesystems: the paths it watches (the DB's directory, the engine's
 * root dir from `docker info`, configured paths), and a block set below the current usage stopping the refill.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { assertDiskAllows, DiskBlockedError, isPoolHeld, readDiskGuard } from '../../src/host/disk';
import { claimEnvironment } from '../../src/host/pool/claim';
import type { StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { taskQueueFor } from '../../src/ids';
import { poolRefill } from '../../src/workflows';
import { testDeps, testSettings, uniqueId } from '../helpers/fixtures';
import { keeperWorker } from '../helpers/temporal';
import { poolDb, poolTestFile } from './helpers';

const env = poolTestFile();
let db: StateDb;
const docker = new DockerClient();

function usedPercentOf(dir: string): number {
  const s = fs.statfsSync(dir);
  return ((s.blocks - s.bavail) / s.blocks) * 100;
}

describe('disk guard', () => {
  it("watches the DB's directory, the engine's root dir and configured paths, and reports a missing one", async () => {
    const t = poolDb();
    db = t.db;
    const dockerRoot = (await docker.info()).dockerRootDir;
    const settings = testSettings({ db: t.file, diskPaths: `${path.dirname(t.file)},/nonexistent/keeper-disk-path` });
    const v = await readDiskGuard({ docker, settings });
    expect(v.paths.map((p) => [p.role, p.path])).toEqual([
      ['state DB directory', path.dirname(t.file)],
      ['docker root dir', dockerRoot],
      ['configured path', path.dirname(t.file)],
      ['configured path', '/nonexistent/keeper-disk-path'],
    ]);
    expect(v.paths[1].usedPercent).toBeCloseTo(usedPercentOf(dockerRoot), 0);
    expect(v.paths[3]).toMatchObject({ level: 'unknown', message: expect.stringContaining('does not exist on this machine') });
  });

  it('says so when the engine cannot tell its root dir, instead of skipping it', async () => {
    const t = poolDb();
    db = t.db;
    const v = await readDiskGuard({ docker: new DockerClient('unix:///nonexistent/docker.sock'), settings: testSettings({ db: t.file }) });
    expect(v.paths[1]).toMatchObject({
      role: 'docker root dir',
      level: 'unknown',
      message: expect.stringContaining('docker info failed, root dir unknown'),
    });
    expect(v.level).not.toBe('ok');
  });

  it('a block set below the current usage stops the refill, names path and usage, and is recorded', async () => {
    const t = poolDb();
    db = t.db;
    const used = usedPercentOf(path.dirname(t.file));
    const block = Math.max(0, Math.floor(used) - 1);
    const settings = testSettings({ db: t.file, diskWarn: String(block), diskBlock: String(block) });
    const worker = await keeperWorker(env, { db, docker, settings });
    const result = await worker.runUntil(
      env.client.workflow.execute(poolRefill, { taskQueue: taskQueueFor(settings.hostId), workflowId: uniqueId('pool-refill-') }),
    );
    expect(result.blocked).toBe(true);
    expect(result.plan).toBeNull();
    expect(result.created).toEqual([]);
    expect(result.error).toMatch(
      new RegExp(
        `^pool refill blocked by the disk guard: insufficient disk space at ${path.dirname(t.file)} \\(state DB directory\\): \\d+\\.\\d% used, block threshold ${block}%`,
      ),
    );
    expect(db.prepare('SELECT COUNT(*) FROM warm_pool').pluck().get()).toBe(0);
    expect(await docker.listContainers({ 'ah.type': 'warm-pool' })).toEqual([]);
    const recorded = JSON.parse(db.prepare(`SELECT result_json FROM keeper_loop_results WHERE loop = 'pool'`).pluck().get() as string);
    expect(recorded).toMatchObject({ blocked: true, error: result.error });

    await expect(assertDiskAllows({ docker, settings }, 'deploy')).rejects.toThrow(DiskBlockedError);
    await expect(assertDiskAllows({ docker, settings }, 'deploy')).rejects.toThrow(
      /^deploy blocked by the disk guard: insufficient disk space at /,
    );
  });

  it('a block refuses a cold environment create, leaving nothing, but still lets a warm claim take a ready container', async () => {
    const t = poolDb();
    db = t.db;
    const roomy = testSettings({ db: t.file, diskWarn: '99.9', diskBlock: '100' });
    const [cid] = await (async () => {
      const { createPoolActivities } = await import('../../src/activities/pool');
      const r = await createPoolActivities(testDeps({ db, docker, settings: roomy })).createPoolEntry({
        entryId: uniqueId('wp_'),
        templateId: 'tmpl_default',
      });
      return [r.containerId!];
    })();
    const block = Math.max(0, Math.floor(usedPercentOf(path.dirname(t.file))) - 1);
    const settings = testSettings({ db: t.file, diskWarn: String(block), diskBlock: String(block) });
    const warm = await claimEnvironment(
      { db, docker, settings, tenantRuntime: settings.tenantRuntime },
      { tenant: t.tenant, name: 'warmok' },
    );
    expect(warm).toMatchObject({ mode: 'warm', containerId: cid });
    await expect(
      claimEnvironment({ db, docker, settings, tenantRuntime: settings.tenantRuntime }, { tenant: t.tenant, name: 'coldno' }),
    ).rejects.toThrow(/^cold environment create blocked by the disk guard: insufficient disk space at /);
    const row = db.prepare(`SELECT id, status, container_id, volume_name FROM environments WHERE name = 'coldno'`).get() as Record<
      string,
      string
    >;
    expect(row).toMatchObject({ status: 'failed', container_id: '', volume_name: '' });
    expect(await docker.listContainers({ 'ah.environment': row.id })).toEqual([]);
  });

  it('a refill that met the block holds it while usage stays at or above --disk-warn, and refills once under it', async () => {
    const t = poolDb();
    db = t.db;
    const used = usedPercentOf(path.dirname(t.file));
    const below = String(Math.max(0, Math.floor(used) - 1));
    const above = String(Math.min(100, Math.ceil(used) + 2));
    const hostId = testSettings().hostId;
    const at = (warn: string, block: string) => testSettings({ hostId, db: t.file, diskWarn: warn, diskBlock: block, poolSize: '0' });
    const refill = async (settings: ReturnType<typeof testSettings>) => {
      const worker = await keeperWorker(env, { db, docker, settings });
      return worker.runUntil(
        env.client.workflow.execute(poolRefill, { taskQueue: taskQueueFor(settings.hostId), workflowId: uniqueId('pool-refill-') }),
      );
    };
    expect((await refill(at(below, below))).blocked).toBe(true);
    expect(isPoolHeld({ db, settings: at(below, below) })).toBe(true);
    // the block is raised above the usage, the warning is not: still blocked, and it says why
    const held = await refill(at(below, above));
    expect(held.blocked).toBe(true);
    expect(held.error).toContain(`held since a path reached the block threshold ${above}%, until every path is under ${below}%`);
    // under the warning threshold: the hold clears and the refill runs
    const free = await refill(at(above, above));
    expect(free.blocked).toBe(false);
    expect(isPoolHeld({ db, settings: at(above, above) })).toBe(false);
  });

  it('below the thresholds the refill runs and the verdict is ok', async () => {
    const t = poolDb();
    db = t.db;
    const settings = testSettings({ db: t.file, diskWarn: '99.9', diskBlock: '100', pooledTemplates: 'default', poolSize: '1' });
    expect((await assertDiskAllows({ docker, settings })).level).toBe('ok');
    const worker = await keeperWorker(env, { db, docker, settings });
    const result = await worker.runUntil(
      env.client.workflow.execute(poolRefill, { taskQueue: taskQueueFor(settings.hostId), workflowId: uniqueId('pool-refill-') }),
    );
    expect(result).toMatchObject({ blocked: false, disk: { level: 'ok' } });
    expect(result.created).toHaveLength(1);
  });
});
