/**
 * Faults while sweeping: an engine error on one resource skips that resource, a class that cannot be observed
 * is reported while the other classes still run, and a DB error never makes anything an orphan. Engine faults
 * come from a proxy in front of the real socket (test/helpers/docker-proxy.ts); the DB fault is a real
 * SQLite error (a table that has gone missing).
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { GcClass, GcClassResult, GcSweepResult } from '../../src/contracts/gc';
import type { StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import type { Settings } from '../../src/settings';
import { taskQueueFor } from '../../src/ids';
import { gcSweep } from '../../src/workflows/gcSweep';
import { DockerProxy } from '../helpers/docker-proxy';
import { EngineFixture, freshDb, tempDir, testSettings, uniqueId } from '../helpers/fixtures';
import { devServerEnv, keeperWorker } from '../helpers/temporal';
import { TestDockerClient } from '../helpers/test-docker';

const docker = new TestDockerClient();
let env: TestWorkflowEnvironment;
let proxy: DockerProxy;
const fx = new EngineFixture();

beforeAll(async () => {
  env = await devServerEnv();
  proxy = await DockerProxy.start();
});
afterEach(() => proxy.clear());
afterAll(async () => {
  await fx.cleanup();
  await proxy?.close();
  await env?.teardown();
});

async function sweep(db: StateDb, settings: Settings): Promise<GcSweepResult> {
  const worker = await keeperWorker(env, { db, docker: new DockerClient(proxy.dockerHost), settings });
  return worker.runUntil(
    env.client.workflow.execute(gcSweep, { taskQueue: taskQueueFor(settings.hostId), workflowId: `gc-fault-${uniqueId()}`, args: [] }),
  );
}

const cls = (r: GcSweepResult, c: GcClass): GcClassResult => r.classes.find((x) => x.class === c)!;
const exists = (p: Promise<unknown>) =>
  p.then(
    () => true,
    (e: { isNotFound?: boolean }) => (e.isNotFound ? false : Promise.reject(e)),
  );
const settings = () => testSettings({ gcMinAge: '0s', buildDir: tempDir() });

describe('engine errors', () => {
  it('a failed removal skips that volume only; the others are removed and the failure is reported', async () => {
    const { db } = freshDb();
    const u = uniqueId('');
    const [bad, good] = [await fx.volume(`ah-db-${u}-bad`), await fx.volume(`ah-db-${u}-good`)];
    proxy.fail({ method: 'DELETE', path: new RegExp(`^/volumes/${bad}$`), status: 500 });
    const r = await sweep(db, settings());
    expect(await exists(docker.inspectVolume(bad))).toBe(true);
    expect(await exists(docker.inspectVolume(good))).toBe(false);
    expect(cls(r, 'volumes').failed).toEqual([{ name: bad, error: expect.stringContaining('HTTP 500') }]);
    expect(cls(r, 'volumes').removed.map((i) => i.name)).toContain(good);
    db.close();
  });

  it('a network whose inspect fails (500, or even 404) is never taken for empty', async () => {
    const { db } = freshDb();
    const u = uniqueId('');
    const id500 = await fx.network(`ah-tenant-${u}-e500`);
    const id404 = await fx.network(`ah-tenant-${u}-e404`);
    const ok = `ah-tenant-${u}-ok`;
    await fx.network(ok);
    proxy.fail({ method: 'GET', path: new RegExp(`^/networks/${id500}$`), status: 500 });
    proxy.fail({ method: 'GET', path: new RegExp(`^/networks/${id404}$`), status: 404 });
    const r = await sweep(db, settings());
    expect(await exists(docker.inspectNetwork(id500))).toBe(true);
    expect(await exists(docker.inspectNetwork(id404))).toBe(true);
    expect(await exists(docker.inspectNetwork(ok))).toBe(false);
    expect(cls(r, 'networks').skipped).toEqual([{ name: `ah-tenant-${u}-e500`, error: expect.stringContaining('HTTP 500') }]);
    expect(proxy.requests.some((q) => q.method === 'DELETE' && q.path.includes(id500))).toBe(false);
    db.close();
  });

  it('a class whose list fails is reported, and the other classes still run', async () => {
    const { db } = freshDb();
    const u = uniqueId('');
    const c = `ah-svc-${u}-orphan`;
    await fx.run({ name: c, labels: { 'ah.service': u }, network: 'none' }, false);
    const v = await fx.volume(`ah-env-${u}`);
    // the containers class lists first; only that one list call fails
    proxy.fail({ method: 'GET', path: /^\/containers\/json$/, status: 500, times: 1 });
    const r = await sweep(db, settings());
    expect(cls(r, 'containers').error).toMatch(/HTTP 500/);
    expect(r.totals.classErrors).toBe(1);
    expect(await exists(docker.inspectContainer(c))).toBe(true);
    expect(await exists(docker.inspectVolume(v))).toBe(false);
    db.close();
  });
});

describe('DB errors', () => {
  it('references that cannot be read skip containers, volumes and snapshots; nothing becomes an orphan', async () => {
    const { db } = freshDb();
    const u = uniqueId('');
    const c = `ah-env-${u}-unread`;
    await fx.run({ name: c, labels: { 'ah.type': 'environment' }, network: 'none' }, false);
    const v = await fx.volume(`ah-pool-${u}-unread`);
    const n = `ah-tenant-${u}-still-swept`;
    await fx.network(n);
    db.exec('ALTER TABLE warm_pool RENAME TO warm_pool_gone');
    try {
      const r = await sweep(db, settings());
      for (const k of ['containers', 'volumes', 'snapshots'] as GcClass[]) {
        expect(cls(r, k).error, k).toMatch(/no such table: warm_pool/);
        expect(cls(r, k).removed, k).toEqual([]);
      }
      expect(await exists(docker.inspectContainer(c))).toBe(true);
      expect(await exists(docker.inspectVolume(v))).toBe(true);
      // a class that needs no DB still runs
      expect(cls(r, 'networks').error).toBeUndefined();
      expect(await exists(docker.inspectNetwork(n))).toBe(false);
    } finally {
      db.exec('ALTER TABLE warm_pool_gone RENAME TO warm_pool');
      db.close();
    }
  });
});
