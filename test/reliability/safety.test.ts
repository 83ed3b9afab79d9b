/**
 * Safety across all three loops: a seeded mix of ah-owned, young, referenced, unlabelled, foreign and
 * label-spoofing containers, volumes and networks on an engine of this test's own (real GC removals, so never
 * the suite's shared engine). After every tick, sweep and refill, in a seeded order, nothing foreign, young or
 * referenced is gone, and no DB row has been repaired from a label.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StateDb } from '../../src/db/open';
import { taskQueueFor } from '../../src/ids';
import { gcSweep, poolRefill, reconcileTick } from '../../src/workflows';
import { freshDb, tempDir, testSettings, TEST_IMAGE, uniqueId, waitFor } from '../helpers/fixtures';
import { extraEngine } from '../helpers/engines';
import { devServerEnv, keeperWorker } from '../helpers/temporal';
import { addService, addTenant, service } from '../reconcile/rows';
import { rng } from '../helpers/rng';
import { TestDockerClient } from '../helpers/test-docker';

const ENGINE = 'rel-safety'; // an engine nobody else sweeps
const MIN_AGE_S = 15;
let env: TestWorkflowEnvironment;
let docker: TestDockerClient;
let db: StateDb;
let worker: Worker | undefined;
let running: Promise<void> | undefined;
const u = uniqueId('s');
let tenants: string[] = [];

beforeAll(async () => {
  docker = new TestDockerClient(extraEngine(ENGINE).dockerHost);
  env = await devServerEnv();
});
afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  for (const c of await docker.listContainers({}, { all: true })) {
    if (c.name.includes(u) || c.labels['ah.type'] === 'warm-pool')
      await docker.removeContainer(c.id, { force: true }).catch(() => undefined);
  }
  for (const v of await docker.listVolumes())
    if (v.name.includes(u) || v.name.startsWith('ah-pool-')) await docker.removeVolume(v.name).catch(() => undefined);
  for (const n of await docker.listNetworks()) {
    if (n.name.includes(u) || n.name === 'ah-pool' || tenants.some((t) => n.name === `ah-tenant-${t}`))
      await docker.removeNetwork(n.id).catch(() => undefined);
  }
  db?.close();
  await env?.teardown();
});

type Kind = 'foreign' | 'unlabelled' | 'referenced' | 'spoof' | 'orphan' | 'young';
interface Res {
  kind: Kind;
  type: 'container' | 'volume' | 'network';
  ref: string;
  createdAt: number;
}

describe('safety across tick, sweep and refill', () => {
  it('seed 7: nothing foreign, young or referenced is ever gone; labels never repair the DB', async () => {
    const r = rng(7);
    db = freshDb().db;
    db.prepare('UPDATE environment_templates SET base_image = ?').run(TEST_IMAGE);
    const settings = testSettings({
      gcMinAge: `${MIN_AGE_S}s`,
      pooledTemplates: 'default',
      poolSize: '1',
      poolMaxTotal: '1',
      buildDir: tempDir(),
      recovery: 'stop',
    });
    const q = taskQueueFor(settings.hostId);
    const res: Res[] = [];
    const now = () => Date.now() / 1000;
    const container = async (kind: Kind, name: string, labels: Record<string, string>, network = 'none') => {
      const id = await docker.createContainer({
        image: TEST_IMAGE,
        cmd: ['sleep', '3600'],
        name,
        labels,
        network,
        restartPolicy: kind === 'referenced' ? 'unless-stopped' : 'no',
      });
      if (r.next() < 0.8 || kind === 'referenced' || kind === 'spoof') await docker.startContainer(id);
      res.push({ kind, type: 'container', ref: id, createdAt: now() });
      return id;
    };
    const volume = async (kind: Kind, name: string) => {
      await docker.createVolume(name, {});
      res.push({ kind, type: 'volume', ref: name, createdAt: now() });
    };

    tenants = [addTenant(db), addTenant(db)];
    const services: { sid: string; cid: string; tenant: string }[] = [];
    for (let i = 0; i < 4; i++) {
      const tenant = r.pick(tenants);
      const sid = `svc${u}${i}`;
      const net = `ah-tenant-${tenant}`;
      if (!(await docker.listNetworks(net)).some((n) => n.name === net)) {
        await docker.ensureNetwork(net);
        res.push({ kind: 'referenced', type: 'network', ref: net, createdAt: now() });
      }
      const cid = await container(
        'referenced',
        `ah-${tenant}-${sid}`,
        { 'ah.tenant': tenant, 'ah.service': sid, 'ah.managed': 'true' },
        net,
      );
      addService(db, tenant, { containerId: cid }, sid);
      services.push({ sid, cid, tenant });
    }
    for (let i = 0; i < 3; i++) {
      const name = `ah-db-${u}-ref${i}`;
      await volume('referenced', name);
      db.prepare(
        `INSERT INTO databases (id, tenant_id, name, type, status, container_id, password_encrypted, volume_name, created_at, updated_at)
        VALUES (?, ?, ?, 'postgres', 'provisioning', '', '', ?, 1700000000, 1700000000)`,
      ).run(`db${u}${i}`, tenants[0], `db${i}`, name);
    }
    const n = 3 + Math.floor(r.next() * 3);
    for (let i = 0; i < n; i++) {
      await container('foreign', `fx-${u}-c${i}`, r.next() < 0.5 ? {} : { 'com.example.owner': 'someone-else' });
      await container('unlabelled', `ah-${u}-nolabel${i}`, {}); // an ah-looking name is not ownership
      await volume('foreign', r.pick([`fx-${u}-v${i}`, `data-${u}-${i}`, `ahdb-${u}-${i}`]));
      await docker.ensureNetwork(`fx-${u}-n${i}`);
      res.push({ kind: 'foreign', type: 'network', ref: `fx-${u}-n${i}`, createdAt: now() });
    }
    // Spoofs: containers that claim a real service (and another tenant) by label. Neither their claim nor their
    // removal may touch the real service's row or container.
    const spoofed = services.slice(0, 2);
    for (const [i, s] of spoofed.entries()) {
      await container('spoof', `fx-${u}-spoof${i}`, {
        'ah.tenant': tenants.find((t) => t !== s.tenant) ?? 'tn-other',
        'ah.service': s.sid,
        'ah.managed': 'true',
      });
    }
    for (let i = 0; i < 2; i++) {
      await volume('orphan', `ah-env-${u}-orph${i}`);
      await container('orphan', `ah-env-${u}-orph${i}`, { 'ah.type': 'environment', 'ah.tenant': tenants[0] });
    }
    const t0 = now();
    await waitFor(`the first resources to be older than ${MIN_AGE_S} s`, () => now() - t0 > MIN_AGE_S + 1, (MIN_AGE_S + 5) * 1000, 250);

    const exists = async (x: Res): Promise<boolean> => {
      try {
        if (x.type === 'container') await docker.inspectContainer(x.ref);
        else if (x.type === 'volume') await docker.inspectVolume(x.ref);
        else await docker.inspectNetwork(x.ref);
        return true;
      } catch (err) {
        if ((err as { isNotFound?: boolean }).isNotFound) return false;
        throw err;
      }
    };
    const mustStay = (x: Res) =>
      x.kind === 'foreign' ||
      x.kind === 'unlabelled' ||
      x.kind === 'referenced' ||
      (x.kind === 'young' && now() - x.createdAt < MIN_AGE_S - 2);
    const rowsBefore = services.map((s) => ({ sid: s.sid, cid: service(db, s.sid).container_id }));

    worker = await keeperWorker(env, { db, docker, settings });
    running = worker.run();
    const steps: string[] = [];
    let removedBySweeps = 0;
    const splitBrainReports = () =>
      db.prepare(`SELECT COUNT(*) FROM keeper_reported_problems WHERE problem = 'split-brain'`).pluck().get() as number;
    let splitBrainMost = 0;
    for (let i = 0; i < 6; i++) {
      // A tick first, so that it meets the spoofs before a sweep collects them as unreferenced ah containers.
      const step = i === 0 ? 'tick' : r.pick(['tick', 'sweep', 'refill'] as const);
      steps.push(step);
      if (step === 'sweep') {
        // Fresh ah-owned orphans right before the sweep: young, so they must stay.
        await volume('young', `ah-env-${u}-young${i}`);
        await container('young', `ah-env-${u}-young${i}`, { 'ah.type': 'environment', 'ah.tenant': tenants[0] });
        const s = await env.client.workflow.execute(gcSweep, { taskQueue: q, workflowId: uniqueId('gc-safe-'), args: [] });
        removedBySweeps += s.totals.removed;
      } else if (step === 'tick') {
        const t = await env.client.workflow.execute(reconcileTick, { taskQueue: q, workflowId: uniqueId('tick-safe-') });
        expect(t.dockerReachable).toBe(true);
        expect(t.crashes).toBe(0);
      } else {
        const p = await env.client.workflow.execute(poolRefill, { taskQueue: q, workflowId: uniqueId('pool-safe-') });
        expect(p.error).toBeUndefined();
      }
      for (const x of res.filter(mustStay)) expect(await exists(x), `${step} #${i} removed ${x.kind} ${x.type} ${x.ref}`).toBe(true);
      // Pool entries keeper made and rows reference stay too.
      for (const w of db.prepare(`SELECT container_id, volume_name FROM warm_pool`).all() as {
        container_id: string;
        volume_name: string;
      }[]) {
        expect(await exists({ kind: 'referenced', type: 'container', ref: w.container_id, createdAt: 0 })).toBe(true);
        expect(await exists({ kind: 'referenced', type: 'volume', ref: w.volume_name, createdAt: 0 })).toBe(true);
      }
      expect(services.map((s) => ({ sid: s.sid, cid: service(db, s.sid).container_id }))).toEqual(rowsBefore);
      splitBrainMost = Math.max(splitBrainMost, splitBrainReports());
    }
    // Each spoof was reported once while it stood; once a sweep collected it, GC's orphanRecords class forgot the report.
    const spoofsLeft = (await Promise.all(res.filter((x) => x.kind === 'spoof').map(exists))).filter(Boolean).length;
    const splitBrain = splitBrainReports();
    const orphansLeft = await Promise.all(res.filter((x) => x.kind === 'orphan' || x.kind === 'spoof').map(exists));
    console.log(
      `safety seed 7: ${res.length} resources (${res.filter((x) => x.kind === 'foreign' || x.kind === 'unlabelled').length} foreign/unlabelled, ${res.filter((x) => x.kind === 'referenced').length} referenced, ${res.filter((x) => x.kind === 'young').length} young), steps ${steps.join(',')}; sweeps removed ${removedBySweeps}; old orphans+spoofs left ${orphansLeft.filter(Boolean).length}/${orphansLeft.length}; split-brain reports ${splitBrain}`,
    );
    expect(splitBrainMost).toBe(spoofed.length);
    expect(splitBrain).toBe(spoofsLeft);
    for (const s of services) expect((await docker.inspectContainer(s.cid)).status).toBe('running');
  }, 180_000);
});
