/**
 * The refill workflow against the real engine, a real SQLite file and the CLI dev server: sizing, the
 * pooled-templates setting, the containers it makes, idempotent creation and ghost pruning (404 only).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ContainerInspectInfo } from 'dockerode';
import { describe, expect, it } from 'vitest';
import { createPoolActivities } from '../../src/activities/pool';
import { poolContainerName, poolVolumeName } from '../../src/names';
import type { PoolRefillResult } from '../../src/contracts/pool';
import type { StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { isNotFound } from '../../src/docker/errors';
import type { RawSettings, Settings } from '../../src/settings';
import { taskQueueFor } from '../../src/ids';
import { poolRefill } from '../../src/workflows';
import { DockerProxy } from '../helpers/docker-proxy';
import { TEST_IMAGE, testDeps, testSettings, uniqueId } from '../helpers/fixtures';
import { keeperWorker } from '../helpers/temporal';
import { poolDb, poolTestFile, readyByTemplate } from './helpers';
import { TestDockerClient } from '../helpers/test-docker';

const env = poolTestFile();
let db: StateDb;
const docker = new TestDockerClient();

async function refill(settings: Settings, client = docker): Promise<PoolRefillResult> {
  const worker = await keeperWorker(env, { db, docker: client, settings });
  return worker.runUntil(
    env.client.workflow.execute(poolRefill, { taskQueue: taskQueueFor(settings.hostId), workflowId: uniqueId('pool-refill-') }),
  );
}

function settingsFor(file: string, extra: RawSettings = {}): Settings {
  return testSettings({ db: file, diskWarn: '99', diskBlock: '100', ...extra });
}

describe('poolRefill', () => {
  it('fills default, node and python to 2 each and leaves go at 0; a second refill creates nothing', async () => {
    const t = poolDb();
    db = t.db;
    const settings = settingsFor(t.file);
    const first = await refill(settings);
    expect(first.blocked).toBe(false);
    expect(first.failed).toEqual([]);
    expect(first.created.filter((c) => c.outcome === 'created')).toHaveLength(6);
    expect(readyByTemplate(db)).toEqual({ tmpl_default: 2, tmpl_node: 2, tmpl_python: 2 });

    const onEngine = await docker.listContainers({ 'ah.type': 'warm-pool' });
    expect(onEngine).toHaveLength(6);
    const second = await refill(settings);
    expect(second.created).toEqual([]);
    expect(readyByTemplate(db)).toEqual({ tmpl_default: 2, tmpl_node: 2, tmpl_python: 2 });
    expect(await docker.listContainers({ 'ah.type': 'warm-pool' })).toHaveLength(6);

    const last = db.prepare(`SELECT result_json FROM keeper_loop_results WHERE loop = 'pool'`).pluck().get() as string;
    expect(JSON.parse(last)).toMatchObject({ blocked: false, ready: { tmpl_default: 2, tmpl_node: 2, tmpl_python: 2 } });
  });

  it('makes each pool container from its template: labels, network, volume at /workspace, running', async () => {
    const t = poolDb();
    db = t.db;
    db.prepare(`UPDATE environment_templates SET memory_mb = 64, cpu_millicores = 250 WHERE id = 'tmpl_node'`).run();
    await refill(settingsFor(t.file, { pooledTemplates: 'node', poolSize: '1' }));
    const row = db.prepare(`SELECT id, container_id, volume_name FROM warm_pool`).get() as {
      id: string;
      container_id: string;
      volume_name: string;
    };
    expect(row.volume_name).toBe(poolVolumeName(row.id));
    const c = await docker.inspectContainer(row.container_id);
    expect(c.name).toBe(poolContainerName(row.id));
    expect(c.image).toBe(TEST_IMAGE);
    expect(c.status).toBe('running');
    expect(c.labels).toMatchObject({ 'ah.managed': 'true', 'ah.type': 'warm-pool', 'ah.template': 'tmpl_node' });
    expect(c.networks).toEqual(['ah-pool']);
    expect(c.mounts).toEqual([expect.objectContaining({ type: 'volume', name: row.volume_name, destination: '/workspace' })]);
    const raw = await (docker as unknown as { docker: { getContainer(id: string): { inspect(): Promise<ContainerInspectInfo> } } }).docker
      .getContainer(row.container_id)
      .inspect();
    expect(raw.HostConfig).toMatchObject({
      Memory: 64 * 1024 * 1024,
      NanoCpus: 250e6,
      Init: true,
      RestartPolicy: { Name: 'unless-stopped' },
    });
    expect(raw.Config.Cmd).toEqual(['sleep', 'infinity']);
  });

  it('respects the max total over all templates, in the priority order of the setting', async () => {
    const t = poolDb();
    db = t.db;
    const result = await refill(settingsFor(t.file, { poolSize: '5', poolMaxTotal: '3' }));
    expect(result.created).toHaveLength(3);
    expect(readyByTemplate(db)).toEqual({ tmpl_default: 3 });
  });

  it('pools the templates the setting names (ids or names), not the row order; unknown names are reported', async () => {
    const t = poolDb();
    db = t.db;
    const result = await refill(settingsFor(t.file, { pooledTemplates: 'go,tmpl_python,nosuch', poolSize: '1' }));
    expect(readyByTemplate(db)).toEqual({ tmpl_go: 1, tmpl_python: 1 });
    expect(result.plan?.unknownTemplates).toEqual(['nosuch']);
  });

  it('counts existing ready rows against the max total, so a full pool gets nothing', async () => {
    const t = poolDb();
    db = t.db;
    await refill(settingsFor(t.file, { pooledTemplates: 'python', poolSize: '2' }));
    const result = await refill(settingsFor(t.file, { poolSize: '2', poolMaxTotal: '2' }));
    expect(result.created).toEqual([]);
    expect(readyByTemplate(db)).toEqual({ tmpl_python: 2 });
  });
});

describe('createPoolEntry under retries', () => {
  it('a repeated call with the same entry id makes one container and one row', async () => {
    const t = poolDb();
    db = t.db;
    const acts = createPoolActivities(testDeps({ db, docker, settings: settingsFor(t.file) }));
    const entryId = uniqueId('wp_');
    const a = await acts.createPoolEntry({ entryId, templateId: 'tmpl_default' });
    const b = await acts.createPoolEntry({ entryId, templateId: 'tmpl_default' });
    expect(a.outcome).toBe('created');
    expect(b.outcome).toBe('exists');
    expect(db.prepare('SELECT COUNT(*) FROM warm_pool').pluck().get()).toBe(1);
    expect((await docker.listContainers({ 'ah.pool-entry': entryId })).length).toBe(1);
  });

  it('an attempt that died after starting the container (no row yet) is finished by the retry, reusing the container', async () => {
    const t = poolDb();
    db = t.db;
    const acts = createPoolActivities(testDeps({ db, docker, settings: settingsFor(t.file) }));
    const entryId = uniqueId('wp_');
    const first = await acts.createPoolEntry({ entryId, templateId: 'tmpl_default' });
    db.prepare('DELETE FROM warm_pool WHERE id = ?').run(entryId); // as if the first attempt died before its INSERT
    const retry = await acts.createPoolEntry({ entryId, templateId: 'tmpl_default' });
    expect(retry).toMatchObject({ outcome: 'created', containerId: first.containerId });
    expect((await docker.listContainers({ 'ah.pool-entry': entryId })).map((c) => c.id)).toEqual([first.containerId]);
    expect(db.prepare('SELECT container_id FROM warm_pool WHERE id = ?').pluck().get(entryId)).toBe(first.containerId);
  });

  it('an entry already claimed by an environment is not made again', async () => {
    const t = poolDb();
    db = t.db;
    const acts = createPoolActivities(testDeps({ db, docker, settings: settingsFor(t.file) }));
    const entryId = uniqueId('wp_');
    db.prepare(
      `INSERT INTO environments (id, tenant_id, name, status, container_id, volume_name, created_at, updated_at) VALUES ('e1', ?, 'x', 'running', 'c', ?, 1, 1)`,
    ).run(t.tenant, poolVolumeName(entryId));
    expect((await acts.createPoolEntry({ entryId, templateId: 'tmpl_default' })).outcome).toBe('exists');
    expect(await docker.listContainers({ 'ah.pool-entry': entryId })).toEqual([]);
  });

  it('a template whose image is missing fails without leaving a volume behind', async () => {
    const t = poolDb();
    db = t.db;
    db.prepare(`UPDATE environment_templates SET base_image = 'keeper-test/missing:latest' WHERE id = 'tmpl_default'`).run();
    const acts = createPoolActivities(testDeps({ db, docker, settings: settingsFor(t.file) }));
    const entryId = uniqueId('wp_');
    await expect(acts.createPoolEntry({ entryId, templateId: 'tmpl_default' })).rejects.toThrow(
      'image keeper-test/missing:latest of template tmpl_default is not on this engine',
    );
    expect((await docker.listNetworks('ah-pool')).filter((n) => n.name === 'ah-pool')).toEqual([]);
    await expect(docker.inspectVolume(poolVolumeName(entryId))).rejects.toSatisfy(isNotFound);
    expect(db.prepare('SELECT COUNT(*) FROM warm_pool').pluck().get()).toBe(0);
  });
});

describe('an engine without the tenant runtime (a runtime no engine lists: the main engine may list runsc)', () => {
  it("fails the entry once, not to be retried, with the start check's line, and leaves no container or volume", async () => {
    const t = poolDb();
    db = t.db;
    const acts = createPoolActivities(testDeps({ db, docker, settings: settingsFor(t.file, { tenantRuntime: 'keeper-absent' }) }));
    const entryId = uniqueId('wp_');
    const failure = await acts.createPoolEntry({ entryId, templateId: 'tmpl_default' }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'RuntimeMissing', nonRetryable: true });
    expect((failure as Error).message).toMatch(
      /^tenant runtime keeper-absent is not registered with the Docker engine \(it lists .*\): register keeper-absent with the engine/,
    );
    expect(await docker.listContainers({ 'ah.pool-entry': entryId })).toEqual([]);
    await expect(docker.inspectVolume(poolVolumeName(entryId))).rejects.toSatisfy(isNotFound);
    expect(db.prepare('SELECT COUNT(*) FROM warm_pool').pluck().get()).toBe(0);
  });
});

describe('ghost pruning', () => {
  it('prunes a row on a 404 and keeps a row whose inspect fails transiently', async () => {
    const t = poolDb();
    db = t.db;
    const settings = settingsFor(t.file, { pooledTemplates: 'default', poolSize: '2' });
    await refill(settings);
    const [ghost, live] = db.prepare(`SELECT id, container_id, volume_name FROM warm_pool ORDER BY id`).all() as {
      id: string;
      container_id: string;
      volume_name: string;
    }[];
    await docker.removeContainer(ghost.container_id, { force: true });

    const proxy = await DockerProxy.start();
    try {
      proxy.fail({ method: 'GET', path: new RegExp(`^/containers/${live.container_id}/json$`), status: 500 });
      const acts = createPoolActivities(testDeps({ db, docker: new DockerClient(proxy.dockerHost), settings }));
      const report = await acts.prunePoolGhosts();
      expect(report.pruned).toEqual([ghost.id]);
      expect(report.kept).toEqual([{ id: live.id, error: expect.stringContaining('HTTP 500') }]);
      expect(proxy.requests.filter((r) => r.injected)).toHaveLength(1);
    } finally {
      await proxy.close();
    }
    expect(db.prepare('SELECT id FROM warm_pool').pluck().all()).toEqual([live.id]);
    await expect(docker.inspectVolume(ghost.volume_name)).rejects.toSatisfy(isNotFound);
    expect((await docker.inspectVolume(live.volume_name)).name).toBe(live.volume_name);
    expect((await docker.inspectContainer(live.container_id)).status).toBe('running');
  });

  it('the refill replaces a pruned ghost in the same run', async () => {
    const t = poolDb();
    db = t.db;
    const settings = settingsFor(t.file, { pooledTemplates: 'default', poolSize: '1' });
    await refill(settings);
    const ghost = db.prepare(`SELECT id, container_id FROM warm_pool`).get() as { id: string; container_id: string };
    await docker.removeContainer(ghost.container_id, { force: true });
    const result = await refill(settings);
    expect(result.prune.pruned).toEqual([ghost.id]);
    expect(result.created.map((c) => c.outcome)).toEqual(['created']);
    expect(readyByTemplate(db)).toEqual({ tmpl_default: 1 });
  });
});
