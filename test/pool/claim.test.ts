/**
 * Claims against the real engine and a real SQLite file: warm moves, cold fallbacks that leak nothing, real
 * multi-process concurrency on one ready row, a claim during a refill, and the refill a claim triggers.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ScheduleNotFoundError } from '@temporalio/client';
import { describe, expect, inject, it } from 'vitest';
import { claimEnvironment, type ClaimResult } from '../../src/host/pool/claim';
import { createPoolActivities } from '../../src/activities/pool';
import { environmentContainerName } from '../../src/names';

import { getEnvironment } from '../../src/db/environments';
import type { StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import type { ContainerSpec } from '../../src/docker/engine';
import { isNotFound } from '../../src/docker/errors';
import { poolNetworkIsolates } from '../../src/policy/pool';
import type { RawSettings, Settings } from '../../src/settings';
import { ids, taskQueueFor } from '../../src/ids';
import { requestPoolRefill } from '../../src/temporal/operations';
import { ensureLoopSchedules } from '../../src/loops/schedules';
import { poolRefill } from '../../src/workflows';
import { DockerProxy } from '../helpers/docker-proxy';
import {
  AH_CONFINEMENT,
  confinementOf,
  EngineFixture,
  testDeps,
  testSettings,
  TEST_TENANT_RUNTIME,
  uniqueId,
  waitFor,
  WEB_IMAGE,
} from '../helpers/fixtures';
import { keeperWorker } from '../helpers/temporal';
import { poolDb, poolTestFile, readyByTemplate } from './helpers';
import { TestDockerClient } from '../helpers/test-docker';

const env = poolTestFile();
let db: StateDb;
const docker = new TestDockerClient();

function settingsFor(file: string, extra: RawSettings = {}): Settings {
  return testSettings({ db: file, diskWarn: '99', diskBlock: '100', pooledTemplates: 'default', poolSize: '1', ...extra });
}

/** Fills the pool through the activities (the workflow is covered in refill.test.ts). */
async function fill(settings: Settings, templateId = 'tmpl_default', n = 1): Promise<string[]> {
  const acts = createPoolActivities(testDeps({ db, docker, settings }));
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await acts.createPoolEntry({ entryId: uniqueId('wp_'), templateId });
    out.push(r.containerId!);
  }
  return out;
}

describe('claimEnvironment', () => {
  it('warm: takes the ready container, moves it to the tenant network, renames it, keeps the pool volume', async () => {
    const t = poolDb();
    db = t.db;
    const [cid] = await fill(settingsFor(t.file));
    const poolRow = db.prepare('SELECT id, volume_name FROM warm_pool').get() as { id: string; volume_name: string };

    const r = await claimEnvironment({ db, docker, tenantRuntime: TEST_TENANT_RUNTIME }, { tenant: t.tenant, name: 'dev1' });
    expect(r).toMatchObject({
      mode: 'warm',
      containerId: cid,
      volume: poolRow.volume_name,
      poolEntry: poolRow.id,
      templateId: 'tmpl_default',
    });
    expect(r.containerName).toBe(environmentContainerName(t.tenant, r.envId));

    const c = await docker.inspectContainer(cid);
    expect(c.name).toBe(r.containerName);
    // keeper's ah-pool isolates its members, so leaving it is the refill's job (detach test below).
    expect(r.poolDetach).toBe('deferred');
    expect([...c.networks].sort()).toEqual(['ah-pool', `ah-tenant-${t.tenant}`]);
    expect(c.status).toBe('running');
    expect(c.labels['ah.type']).toBe('warm-pool');
    expect(await confinementOf(cid)).toEqual({ ...AH_CONFINEMENT, readonlyRootfs: false });

    const row = getEnvironment(db, r.envId)!;
    expect(row).toMatchObject({
      status: 'running',
      containerId: cid,
      volumeName: poolRow.volume_name,
      templateId: 'default',
      leaseDurationSeconds: 3600,
    });
    expect(row.leaseExpiresAt).toBe(r.leaseExpiresAt);
    expect(db.prepare('SELECT COUNT(*) FROM warm_pool').pluck().get()).toBe(0);
  });

  it("the refill's detach step takes claimed containers off ah-pool and leaves ready ones on it", async () => {
    const t = poolDb();
    db = t.db;
    const settings = settingsFor(t.file, { poolSize: '2' });
    const filled = await fill(settings, 'tmpl_default', 2);
    const r = await claimEnvironment({ db, docker, tenantRuntime: TEST_TENANT_RUNTIME }, { tenant: t.tenant, name: 'dev1' });
    const ready = filled.find((id) => id !== r.containerId)!;
    const acts = createPoolActivities(testDeps({ db, docker, settings }));

    expect(await acts.detachClaimedFromPool()).toEqual({ detached: [r.containerId], failed: [] });
    expect((await docker.inspectContainer(r.containerId)).networks).toEqual([`ah-tenant-${t.tenant}`]);
    expect((await docker.inspectContainer(ready)).networks).toEqual(['ah-pool']);
    expect(await acts.detachClaimedFromPool()).toEqual({ detached: [], failed: [] }); // level-triggered: nothing left
  });

  it('an ah-pool that does not isolate its members (one made by ah) is left within the claim', async () => {
    const t = poolDb();
    db = t.db;
    await docker.ensureNetwork('ah-pool', { internal: true }); // ah's: inter-container traffic on
    const [cid] = await fill(settingsFor(t.file));
    const r = await claimEnvironment({ db, docker, tenantRuntime: TEST_TENANT_RUNTIME }, { tenant: t.tenant, name: 'dev1' });
    expect(r).toMatchObject({ mode: 'warm', containerId: cid, poolDetach: 'done' });
    expect((await docker.inspectContainer(cid)).networks).toEqual([`ah-tenant-${t.tenant}`]);
  });

  it("keeper's ah-pool drops traffic between its members; an ordinary network (the probe's control) does not", async () => {
    const t = poolDb();
    db = t.db;
    await fill(settingsFor(t.file)); // makes ah-pool
    expect(poolNetworkIsolates(await docker.inspectNetwork('ah-pool'))).toBe(true);
    const engine = new EngineFixture();
    /** Exit code of an HTTP request from one member of `network` to a web server on another member. */
    const probe = async (network: string): Promise<number> => {
      const web = await engine.run({ name: uniqueId('probe-web-'), image: WEB_IMAGE, cmd: undefined, network });
      // By address, with nc: the static busybox's name lookups (and its wget) crash.
      const address = (await docker.inspectNetwork(network)).containers.find((c) => c.id === web)!.ipv4;
      const request = `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${address} 8000 | grep -q '^HTTP/'`;
      const client = await engine.run({ name: uniqueId('probe-'), cmd: ['sh', '-c', request], network });
      const exited = await waitFor(
        `the probe on ${network} to exit`,
        async () => {
          const c = await docker.inspectContainer(client);
          return c.status === 'exited' ? { code: c.exitCode } : undefined;
        },
        30_000,
      );
      return exited.code;
    };
    try {
      const control = uniqueId('ah-tenant-probe');
      await engine.network(control);
      expect(await probe(control)).toBe(0);
      expect(await probe('ah-pool')).not.toBe(0);
    } finally {
      await engine.cleanup();
    }
  });

  it('cold when the template has no ready container: ah-env-<id> volume, container on the tenant network', async () => {
    const t = poolDb();
    db = t.db;
    await fill(settingsFor(t.file)); // a default entry, which a go claim must not take
    const r = await claimEnvironment(
      { db, docker, tenantRuntime: TEST_TENANT_RUNTIME },
      { tenant: t.tenant, name: 'gocold', template: 'go' },
    );
    expect(r).toMatchObject({ mode: 'cold', volume: `ah-env-${r.envId}`, templateId: 'tmpl_go' });
    const c = await docker.inspectContainer(r.containerId);
    expect(c.name).toBe(environmentContainerName(t.tenant, r.envId));
    expect(c.networks).toEqual([`ah-tenant-${t.tenant}`]);
    expect(c.labels).toMatchObject({ 'ah.type': 'environment', 'ah.tenant': t.tenant, 'ah.environment': r.envId });
    expect(c.mounts).toEqual([expect.objectContaining({ name: `ah-env-${r.envId}`, destination: '/workspace' })]);
    expect(await confinementOf(r.containerId)).toEqual({ ...AH_CONFINEMENT, readonlyRootfs: false });
    expect(getEnvironment(db, r.envId)).toMatchObject({ status: 'running', containerId: r.containerId, volumeName: `ah-env-${r.envId}` });
    expect(readyByTemplate(db)).toEqual({ tmpl_default: 1 });
  });

  it('a failed move removes the claimed container and volume, releases the row, and falls back to cold', async () => {
    const t = poolDb();
    db = t.db;
    const [cid] = await fill(settingsFor(t.file));
    const poolVolume = db.prepare('SELECT volume_name FROM warm_pool').pluck().get() as string;
    const proxy = await DockerProxy.start();
    try {
      proxy.fail({ method: 'POST', path: /^\/networks\/[^/]+\/connect$/, status: 500, times: 1 });
      const r = await claimEnvironment(
        { db, docker: new DockerClient(proxy.dockerHost), tenantRuntime: TEST_TENANT_RUNTIME },
        { tenant: t.tenant, name: 'moved' },
      );
      expect(r.mode).toBe('cold');
      expect(r.fallbackReason).toMatch(/could not be moved: .*HTTP 500/);
      expect(getEnvironment(db, r.envId)).toMatchObject({ status: 'running', containerId: r.containerId, volumeName: `ah-env-${r.envId}` });
    } finally {
      await proxy.close();
    }
    await expect(docker.inspectContainer(cid)).rejects.toSatisfy(isNotFound);
    await expect(docker.inspectVolume(poolVolume)).rejects.toSatisfy(isNotFound);
    expect(db.prepare('SELECT COUNT(*) FROM warm_pool').pluck().get()).toBe(0);
  });

  it('a cold create that fails leaves no container, no volume, and a failed row that references nothing', async () => {
    const t = poolDb();
    db = t.db;
    db.prepare(`UPDATE environment_templates SET base_image = 'keeper-test/missing:latest' WHERE id = 'tmpl_go'`).run();
    await expect(
      claimEnvironment({ db, docker, tenantRuntime: TEST_TENANT_RUNTIME }, { tenant: t.tenant, name: 'broken', template: 'go' }),
    ).rejects.toThrow(/HTTP 404/);
    const row = db.prepare(`SELECT id, status, container_id, volume_name FROM environments WHERE name = 'broken'`).get() as {
      id: string;
      status: string;
      container_id: string;
      volume_name: string;
    };
    expect(row).toMatchObject({ status: 'failed', container_id: '', volume_name: '' });
    await expect(docker.inspectVolume(`ah-env-${row.id}`)).rejects.toSatisfy(isNotFound);
    expect(await docker.listContainers({ 'ah.environment': row.id })).toEqual([]);
  });

  it('refuses bad requests before taking anything: unknown tenant or template, bad name, duplicate name', async () => {
    const t = poolDb();
    db = t.db;
    await fill(settingsFor(t.file));
    await expect(claimEnvironment({ db, docker, tenantRuntime: TEST_TENANT_RUNTIME }, { tenant: 'nobody', name: 'x' })).rejects.toThrow(
      'tenant "nobody" not found',
    );
    await expect(
      claimEnvironment({ db, docker, tenantRuntime: TEST_TENANT_RUNTIME }, { tenant: t.tenant, name: 'x', template: 'cobol' }),
    ).rejects.toThrow('template "cobol" not found');
    await expect(
      claimEnvironment({ db, docker, tenantRuntime: TEST_TENANT_RUNTIME }, { tenant: t.tenant, name: '9lives' }),
    ).rejects.toThrow(/invalid environment name/);
    expect(readyByTemplate(db)).toEqual({ tmpl_default: 1 });
    await claimEnvironment({ db, docker, tenantRuntime: TEST_TENANT_RUNTIME }, { tenant: t.tenant, name: 'twice', template: 'go' });
    await expect(claimEnvironment({ db, docker, tenantRuntime: TEST_TENANT_RUNTIME }, { tenant: t.tenant, name: 'twice' })).rejects.toThrow(
      /already exists/,
    );
    expect(readyByTemplate(db)).toEqual({ tmpl_default: 1 });
  });

  it('10 concurrent claims from 10 processes on one ready row: exactly one warm, nine cold, nothing shared', async () => {
    const t = poolDb();
    db = t.db;
    const [cid] = await fill(settingsFor(t.file));
    const tsx = path.resolve(__dirname, '../../node_modules/.bin/tsx');
    const children = Array.from({ length: 10 }, (_, i) =>
      spawn(tsx, [path.join(__dirname, 'claim-child.ts'), t.file, t.tenant, `c${i}`, 'default'], { stdio: ['pipe', 'pipe', 'inherit'] }),
    );
    const lines = children.map((c) => {
      let buf = '';
      c.stdout!.on('data', (d: Buffer) => (buf += d.toString()));
      return () => buf.split('\n').filter(Boolean);
    });
    await waitFor('all claimants ready', () => lines.every((l) => l()[0] === 'ready'), 60_000);
    for (const c of children) c.stdin!.write('go\n');
    await waitFor('all claimants done', () => lines.every((l) => l().length >= 2), 60_000);
    const results = lines.map((l) => JSON.parse(l()[1]) as { ok: boolean; result: ClaimResult; error?: string });
    expect(results.filter((r) => !r.ok)).toEqual([]);
    const warm = results.filter((r) => r.result.mode === 'warm');
    expect(warm).toHaveLength(1);
    expect(warm[0].result.containerId).toBe(cid);
    expect(results.filter((r) => r.result.mode === 'cold')).toHaveLength(9);
    expect(new Set(results.map((r) => r.result.containerId)).size).toBe(10);
    expect(new Set(results.map((r) => r.result.volume)).size).toBe(10);
    expect(db.prepare(`SELECT COUNT(*) FROM environments WHERE status = 'running'`).pluck().get()).toBe(10);
    expect(db.prepare('SELECT COUNT(*) FROM warm_pool').pluck().get()).toBe(0);
    const nets = (await docker.listNetworks(`ah-tenant-${t.tenant}`)).filter((n) => n.name === `ah-tenant-${t.tenant}`);
    expect(nets).toHaveLength(1);
  });
});

describe('claims and refills', () => {
  it('a refill in progress does not delay a claim', async () => {
    const t = poolDb();
    db = t.db;
    const settings = settingsFor(t.file, { poolSize: '2' });
    const [cid] = await fill(settings);

    // The refill's container create waits on a gate the test holds (the engine call itself is real).
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let held = false;
    class GatedDocker extends DockerClient {
      override async createContainer(spec: ContainerSpec): Promise<string> {
        held = true;
        await gate;
        return super.createContainer(spec);
      }
    }
    const worker = await keeperWorker(env, { db, docker: new GatedDocker(), settings });
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(poolRefill, {
        taskQueue: taskQueueFor(settings.hostId),
        workflowId: uniqueId('pool-refill-'),
      });
      await waitFor('the refill to be creating a container', () => held, 30_000);
      const r = await claimEnvironment({ db, docker, tenantRuntime: TEST_TENANT_RUNTIME }, { tenant: t.tenant, name: 'during' });
      expect(r).toMatchObject({ mode: 'warm', containerId: cid });
      expect((await handle.describe()).status.name).toBe('RUNNING');
      release();
      const result = await handle.result();
      expect(result.created.map((c) => c.outcome)).toEqual(['created']);
    });
    expect(readyByTemplate(db)).toEqual({ tmpl_default: 1 });
  });

  it("after a claim, a refill is requested of the host's pool schedule: it refills and detaches the claimed container; paused, it is left alone", async () => {
    const t = poolDb();
    db = t.db;
    const settings = settingsFor(t.file, { poolInterval: '1h', poolSize: '1', temporalAddress: inject('devServerAddress') });
    await ensureLoopSchedules(env.client, settings, ['pool']);
    const worker = await keeperWorker(env, { db, docker, settings });
    try {
      await worker.runUntil(async () => {
        await fill(settings); // or the schedule's own first refill fills it first
        const cid = db.prepare(`SELECT container_id FROM warm_pool WHERE status = 'ready'`).pluck().get() as string;
        const r = await claimEnvironment({ db, docker, tenantRuntime: TEST_TENANT_RUNTIME }, { tenant: t.tenant, name: 'trig' });
        expect(r).toMatchObject({ mode: 'warm', containerId: cid });
        expect(readyByTemplate(db)).toEqual({});
        expect(await requestPoolRefill(env.client, settings.hostId)).toBe('requested');
        await waitFor('the requested refill to refill the pool', () => readyByTemplate(db).tmpl_default === 1, 30_000);
        expect((await docker.inspectContainer(cid)).networks).toEqual([`ah-tenant-${t.tenant}`]);
        const fresh = db.prepare('SELECT container_id FROM warm_pool').pluck().get() as string;
        expect((await docker.inspectContainer(fresh)).labels['ah.type']).toBe('warm-pool');

        // An operator's pause (e.g. before a drain) holds against claims.
        const schedule = env.client.schedule.getHandle(ids.schedule(settings.hostId, 'pool'));
        await schedule.pause('test');
        const runs = (await schedule.describe()).info.numActionsTaken;
        expect(
          await claimEnvironment({ db, docker, tenantRuntime: TEST_TENANT_RUNTIME }, { tenant: t.tenant, name: 'trig2' }),
        ).toMatchObject({ mode: 'warm' });
        expect(await requestPoolRefill(env.client, settings.hostId)).toBe('not requested: the pool schedule is paused');
        expect((await schedule.describe()).info.numActionsTaken).toBe(runs);
      });
    } finally {
      await env.client.schedule
        .getHandle(ids.schedule(settings.hostId, 'pool'))
        .delete()
        .catch((e) => {
          if (!(e instanceof ScheduleNotFoundError)) throw e;
        });
    }
  });
});

describe('claims and the tenant runtime (the real gVisor cases are in test/gvisor/)', () => {
  const runtimes = () => db.prepare('SELECT container_id, runtime FROM keeper_container_runtimes ORDER BY container_id').all();

  it('a ready container whose runtime keeper has not recorded (made by ah, or before keeper recorded runtimes) is not claimed until a refill has looked at it', async () => {
    const t = poolDb();
    db = t.db;
    const settings = settingsFor(t.file);
    const [cid] = await fill(settings);
    expect(runtimes()).toEqual([{ container_id: cid, runtime: 'runc' }]); // written with the ready row
    db.prepare('DELETE FROM keeper_container_runtimes').run();

    const cold = await claimEnvironment({ db, docker, tenantRuntime: TEST_TENANT_RUNTIME }, { tenant: t.tenant, name: 'unseen' });
    expect(cold.mode).toBe('cold');
    expect(readyByTemplate(db)).toEqual({ tmpl_default: 1 });

    const report = await createPoolActivities(testDeps({ db, docker, settings })).prunePoolGhosts();
    expect(report).toMatchObject({ checked: 1, pruned: [], replaced: [], kept: [] });
    expect(runtimes()).toEqual([{ container_id: cid, runtime: 'runc' }]);
    const warm = await claimEnvironment({ db, docker, tenantRuntime: TEST_TENANT_RUNTIME }, { tenant: t.tenant, name: 'seen' });
    expect(warm).toMatchObject({ mode: 'warm', containerId: cid });

    await createPoolActivities(testDeps({ db, docker, settings })).prunePoolGhosts();
    expect(runtimes()).toEqual([]); // the claimed container is the environment's now: its pool record goes
  });

  it("the refill's replacement loses to a claim that took the row first: the claimant keeps its container", async () => {
    const t = poolDb();
    db = t.db;
    const [cid] = await fill(settingsFor(t.file)); // runc
    let claim: Promise<ClaimResult> | undefined;
    // The claim runs between the refill's inspect (which finds a runtime other than its own) and its delete.
    class ClaimDuringInspect extends DockerClient {
      override async inspectContainer(id: string) {
        const details = await super.inspectContainer(id);
        claim ??= claimEnvironment({ db, docker, tenantRuntime: 'runc' }, { tenant: t.tenant, name: 'first' });
        await claim;
        return details;
      }
    }
    // Another name for the host kernel's runtime on the same engine: a refill that wants it finds runc foreign.
    const other = settingsFor(t.file, { tenantRuntime: 'io.containerd.runc.v2' });
    const report = await createPoolActivities(testDeps({ db, docker: new ClaimDuringInspect(), settings: other })).prunePoolGhosts();
    expect(report.replaced).toEqual([]);
    expect(await claim).toMatchObject({ mode: 'warm', containerId: cid });
    expect((await docker.inspectContainer(cid)).status).toBe('running');
    expect(getEnvironment(db, (await claim)!.envId)).toMatchObject({ status: 'running', containerId: cid });
  });

  it('without a race, that refill replaces the runc container: row, container and volume go, and a new one is made under its runtime', async () => {
    const t = poolDb();
    db = t.db;
    const [cid] = await fill(settingsFor(t.file));
    const volume = db.prepare('SELECT volume_name FROM warm_pool').pluck().get() as string;
    const other = settingsFor(t.file, { tenantRuntime: 'io.containerd.runc.v2' });
    const acts = createPoolActivities(testDeps({ db, docker, settings: other }));
    const report = await acts.prunePoolGhosts();
    expect(report.replaced).toEqual([{ id: expect.stringMatching(/^wp_/), runtime: 'runc' }]);
    await expect(docker.inspectContainer(cid)).rejects.toSatisfy(isNotFound);
    await expect(docker.inspectVolume(volume)).rejects.toSatisfy(isNotFound);
    expect(readyByTemplate(db)).toEqual({});
    const made = await acts.createPoolEntry({ entryId: uniqueId('wp_'), templateId: 'tmpl_default' });
    expect((await docker.inspectContainer(made.containerId!)).runtime).toBe('io.containerd.runc.v2');
    expect(runtimes()).toEqual([{ container_id: made.containerId, runtime: 'io.containerd.runc.v2' }]);
  });
});
