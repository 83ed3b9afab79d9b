/**
 * Crash accounting and housekeeping through the tick's activities, called in-process (no workflow), against
 * the real engine and a real SQLite file: exact counts under retries, decay, transient engine errors
 * (a proxy socket that answers 500), Docker down, bad rows, split-brain, databases and environments.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { StateDb } from '../../src/db/open';
import { recordCrash, decayEscalations } from '../../src/db/services';
import { DockerClient } from '../../src/docker/client';
import { crashPolicy } from '../../src/policy/deaths/decision';
import type { Settings } from '../../src/settings';
import { DockerProxy } from '../helpers/docker-proxy';
import { EngineFixture, freshDb, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { activities, addService, addTenant, deployments, nowSec, runServiceContainer, service } from './helpers';

let db: StateDb;
let settings: Settings;
let tenant: string;
let proxy: DockerProxy | undefined;
const engine = new EngineFixture();

afterEach(async () => {
  await engine.cleanup();
  await proxy?.close();
  proxy = undefined;
  db?.close();
});
function setup() {
  db = freshDb().db;
  settings = testSettings();
  tenant = addTenant(db);
}

async function tick(docker = new DockerClient()) {
  const a = activities({ db, docker, settings });
  const kept = await a.housekeep();
  const obs = await a.observeHost();
  const applied = await a.applyObservation(obs);
  return { kept, obs, applied, a };
}

async function exitedService(code = 1, fields = {}): Promise<{ sid: string; cid: string }> {
  const sid = uniqueId('svc');
  const cid = await runServiceContainer(engine, tenant, sid, { cmd: ['sh', '-c', `exit ${code}`], restartPolicy: 'no' });
  await waitFor('container to exit', async () => (await engine.docker.inspectContainer(cid)).status === 'exited');
  addService(db, tenant, { containerId: cid, ...fields }, sid);
  return { sid, cid };
}

/** Every row of ah's tables that a tick could touch. */
const ahRows = () =>
  ['services', 'deployments', 'databases', 'environments'].map((t) => db.prepare(`SELECT * FROM ${t} ORDER BY rowid`).all());

describe('crash accounting', () => {
  it('counts once when the same observation is applied again (an activity retry)', async () => {
    setup();
    const { sid } = await exitedService(4);
    const { obs, applied, a } = await tick();
    expect(applied.crashes).toBe(1);
    const again = await a.applyObservation(obs);
    expect(again.crashes).toBe(0);
    expect(service(db, sid).crash_count).toBe(1);
    expect(deployments(db, sid)).toHaveLength(1);
  });

  it('opens at the threshold with a retried opening escalating once', async () => {
    setup();
    const { sid, cid } = await exitedService(1, { crashCount: 4, crashWindowStart: nowSec() - 100, circuitOpenCount: 1 });
    const { obs, applied, a } = await tick();
    expect(applied.opened).toEqual([
      { serviceId: sid, opening: 1, escalation: 2, retryAt: expect.any(Number), why: '5 crashes within 600s (threshold 5)' },
    ]);
    const retried = await a.applyObservation(obs);
    expect(retried.opened).toEqual(applied.opened); // the workflow still gets started after a retry
    expect(service(db, sid)).toMatchObject({ circuit_open: 1, circuit_open_count: 2, crash_count: 5, container_id: cid });
    expect(service(db, sid).circuit_retry_at! - nowSec()).toBeGreaterThan(3600 - 30);
  });

  it('decays escalation 24 h after the last opening keeper recorded, but keeps a count inherited from ah', async () => {
    setup();
    const policy = crashPolicy(settings);
    const look = (cid: string, rc: number) => ({ containerId: cid, state: 'exited', restartCount: rc, health: '' });
    const crashAt = (sid: string, cid: string, now: number, rc: number) =>
      recordCrash(
        db,
        {
          serviceId: sid,
          containerId: cid,
          expectedLook: rc === 0 ? null : look(cid, rc - 1),
          nextLook: look(cid, rc),
          deaths: 5,
          reason: 'x',
          statusAfter: 'crashed',
        },
        now,
        policy,
      );
    const reopen = (sid: string) =>
      db
        .prepare(`UPDATE services SET circuit_open = 0, status = 'running', crash_count = 0, crash_window_start = NULL WHERE id = ?`)
        .run(sid);

    const inherited = addService(db, tenant, { containerId: 'a'.repeat(64), circuitOpenCount: 2 });
    const t0 = 1_800_000_000;
    expect(crashAt(inherited, 'a'.repeat(64), t0, 0).opened).toMatchObject({ opening: 1, escalation: 3, retryAt: t0 + 4 * 3600 });

    const own = addService(db, tenant, { containerId: 'b'.repeat(64) });
    expect(crashAt(own, 'b'.repeat(64), t0, 0).opened).toMatchObject({ opening: 1, escalation: 1, retryAt: t0 + 1800 });
    reopen(own);
    expect(crashAt(own, 'b'.repeat(64), t0 + 3600, 1).opened).toMatchObject({ opening: 2, escalation: 2, retryAt: t0 + 3600 + 3600 });
    reopen(own);
    expect(decayEscalations(db, t0 + 3600 + 86_399, policy.decaySec)).toBe(0);
    expect(decayEscalations(db, t0 + 3600 + 86_400, policy.decaySec)).toBe(1);
    expect(service(db, own).circuit_open_count).toBe(0);
    // The escalation starts over; the opening's number does not (its alerts' keys never repeat).
    expect(crashAt(own, 'b'.repeat(64), t0 + 3600 + 86_400, 2).opened).toMatchObject({
      opening: 3,
      escalation: 1,
      retryAt: t0 + 3600 + 86_400 + 1800,
    });
    expect(service(db, inherited).circuit_open_count).toBe(3);
  });
});

describe('engine faults', () => {
  it('a transient engine error (inspect answers 500) changes nothing in the DB', async () => {
    setup();
    await exitedService(1);
    proxy = await DockerProxy.start();
    proxy.fail({ method: 'GET', path: /^\/containers\/[^/]+\/json$/, status: 500 });
    const before = ahRows();
    const { obs, applied } = await tick(new DockerClient(proxy.dockerHost));
    expect(obs.transientErrors).toBe(1);
    expect(applied.crashes).toBe(0);
    expect(ahRows()).toEqual(before);
    expect(db.prepare('SELECT COUNT(*) FROM keeper_container_snapshots').pluck().get()).toBe(0);
  });

  it('a container list answering 500 or 404 counts nothing, but the DB-only steps still run', async () => {
    for (const status of [500, 404]) {
      setup();
      const { sid } = await exitedService(1);
      const stale = addService(db, tenant, { status: 'deploying', updatedAt: nowSec() - 11 * 60 });
      proxy = await DockerProxy.start();
      proxy.fail({ method: 'GET', path: /^\/containers\/json$/, status });
      const { obs, applied, kept } = await tick(new DockerClient(proxy.dockerHost));
      expect(obs.dockerError).toContain(`HTTP ${status}`);
      expect(applied.crashes).toBe(0);
      expect(service(db, sid)).toMatchObject({ status: 'running', crash_count: 0 });
      expect(kept.failedDeploys).toBe(1);
      expect(service(db, stale)).toMatchObject({ status: 'failed', last_error: 'deploy timed out (reconciler)' });
      expect(deployments(db, stale)).toEqual([expect.objectContaining({ status: 'failed', trigger: 'reconciler' })]);
      await proxy.close();
      proxy = undefined;
      db.close();
    }
  });

  it('Docker unreachable: expired circuits are still handed over for recovery', async () => {
    setup();
    const sid = addService(db, tenant, {
      status: 'crashed',
      containerId: 'c'.repeat(64),
      circuitOpen: 1,
      circuitOpenCount: 1,
      circuitRetryAt: nowSec() - 5,
    });
    const { obs, kept } = await tick(new DockerClient('unix:///nonexistent/docker.sock'));
    expect(obs.dockerError).toBeDefined();
    expect(kept.expiredCircuits).toEqual([expect.objectContaining({ serviceId: sid, escalation: 1, retryAt: expect.any(Number) })]);
  });
});

describe('bad input and split-brain', () => {
  it('reports bad rows and foreign labels without aborting the tick or repairing the DB, and records each once', async () => {
    setup();
    const bad = [
      addService(db, tenant, { containerId: null }),
      addService(db, tenant, { containerId: '' }),
      addService(db, tenant, { containerId: 'c1' }),
      addService(db, tenant, { status: 'zombie', containerId: 'd'.repeat(64) }),
      addService(db, tenant, { containerId: 'e'.repeat(64), crashCount: -1 }),
    ];
    const { sid: good } = await exitedService(1);
    const other = addTenant(db);
    const spoofed = addService(db, tenant, { status: 'stopped' });
    const spoofCid = await runServiceContainer(engine, other, spoofed);
    db.prepare('UPDATE services SET container_id = ? WHERE id = ?').run(spoofCid, spoofed);
    const orphanCid = await runServiceContainer(engine, tenant, uniqueId('ghost'));

    const before = bad.map((id) => service(db, id));
    const { obs, applied } = await tick();
    expect(applied.crashes).toBe(1);
    expect(service(db, good).crash_count).toBe(1);
    expect(bad.map((id) => service(db, id))).toEqual(before);
    const subjects = obs.problems.map((p) => p.subject);
    for (const id of bad) expect(subjects).toContain(`service:${id}`);
    expect(obs.problems).toContainEqual({
      subject: `container:${spoofCid.slice(0, 12)}`,
      problem: expect.stringContaining('another tenant'),
    });
    expect(obs.splitBrain).toContainEqual(expect.objectContaining({ containerId: orphanCid.slice(0, 12), dbContainerId: '' }));
    expect(service(db, spoofed).container_id).toBe(spoofCid);

    // Other files' leftovers on a shared engine may be reported too; what matters is that ours are, once.
    const reported = () => db.prepare('SELECT subject FROM keeper_reported_problems ORDER BY subject').pluck().all() as string[];
    const once = reported();
    expect(once).toEqual(expect.arrayContaining([...bad.map((id) => `service:${id}`), `container:${spoofCid.slice(0, 12)}`]));
    expect(new Set(once).size).toBe(once.length);
    await tick();
    expect(reported()).toEqual(once);
  });
});

describe('databases and environments', () => {
  it('database ready → unavailable when its container dies, and back to ready when it runs again', async () => {
    setup();
    const dbId = uniqueId('db');
    const cid = await engine.run({ name: `ah-db-${dbId}`, labels: { 'ah.managed': 'true', 'ah.type': 'database' }, network: 'none' });
    db.prepare(
      `INSERT INTO databases (id, tenant_id, name, type, status, container_id, password_encrypted, created_at, updated_at)
      VALUES (?, ?, 'pg', 'postgres', 'ready', ?, 'x', 1, 1)`,
    ).run(dbId, tenant, cid);
    const status = () => db.prepare('SELECT status FROM databases WHERE id = ?').pluck().get(dbId);
    expect((await tick()).applied.databasesUnavailable).toBe(0);
    await engine.docker.stopContainer(cid, 0);
    expect((await tick()).applied.databasesUnavailable).toBe(1);
    expect(status()).toBe('unavailable');
    await engine.docker.startContainer(cid);
    expect((await tick()).applied.databasesReady).toBe(1);
    expect(status()).toBe('ready');
  });

  it('environments: gone → stopped, stale creating → failed, an expired lease stops its container once', async () => {
    setup();
    const env = (id: string, status: string, cid: string, lease: number | null, updated = nowSec()) =>
      db
        .prepare(
          `INSERT INTO environments (id, tenant_id, name, status, container_id, lease_expires_at, created_at, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, 1, ?)`,
        )
        .run(id, tenant, id, status, cid, lease, updated);
    const envStatus = (id: string) => db.prepare('SELECT status FROM environments WHERE id = ?').pluck().get(id);
    const label = (id: string) => ({ 'ah.tenant': tenant, 'ah.environment': id, 'ah.type': 'environment' });

    const gone = uniqueId('env');
    const goneCid = await engine.run({ name: `ah-env-${tenant}-${gone}`, labels: label(gone), network: 'none' });
    await engine.docker.removeContainer(goneCid, { force: true });
    env(gone, 'running', goneCid, nowSec() + 3600);
    const creating = uniqueId('env');
    env(creating, 'creating', '', null, nowSec() - 6 * 60);
    const leased = uniqueId('env');
    const leasedCid = await engine.run({ name: `ah-env-${tenant}-${leased}`, labels: label(leased), network: 'none' });
    env(leased, 'running', leasedCid, nowSec() - 1);

    const first = await tick();
    expect(first.kept).toMatchObject({ failedEnvCreates: 1, expiredLeases: 1 });
    expect(first.applied).toMatchObject({ environmentsStopped: 1, containersStopped: 1 });
    expect([envStatus(gone), envStatus(creating), envStatus(leased)]).toEqual(['stopped', 'failed', 'stopped']);
    expect((await engine.docker.inspectContainer(leasedCid)).status).toBe('exited');
    const second = await tick();
    expect(second.applied.containersStopped).toBe(0);
  });
});
