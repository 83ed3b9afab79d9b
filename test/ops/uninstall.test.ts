/**
 * `keeper uninstall` against the real dev server: a host with its schedules, an open circuit whose circuitBreaker
 * workflow runs and a pending alert (no worker polls, as after the worker was stopped). It refuses while anything is
 * in flight and no choice is given, or while a worker polls; it hands circuits over (the DB row keeps the time, and
 * a keeper under another id recovers it), closes them, drops alerts; a second run finds nothing. --purge-state drops
 * keeper_* tables of an ah-made DB and nothing of ah's. A worker started under a new host id on the same DB warns of
 * the old id's leftovers, until `keeper uninstall --host-id OLD` removes them.
 */
import path from 'node:path';
import { Client, Connection, ScheduleNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { recordHostStart } from '../../src/db/keeper-hosts';
import { openStateDb, type StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { ids, taskQueueFor } from '../../src/ids';
import { LOOP_NAMES } from '../../src/loops/registry';
import { serviceAttributes } from '../../src/search-attributes';
import type { Settings } from '../../src/settings';
import { deleteSchedule, lastPollAgoMs, terminateWorkflow } from '../../src/temporal/footprint';
import { loopFootprint } from '../../src/loops/schedules';
import { startDevServer } from '../../src/temporal/dev-server';
import { ensureLoopSchedules } from '../../src/loops/schedules';
import { circuitBreaker } from '../../src/workflows/circuitBreaker';
import { notifyOperators } from '../../src/workflows/notifyOperators';
import { ahSnapshot, makeAhDb } from '../helpers/ah-db';
import { keeperInProcess, startKeeper } from '../helpers/cli';
import { extraEngine, stopEngine, type ExtraEngine } from '../helpers/engines';
import { tempDir, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { devServerForFile, keeperWorker } from '../helpers/temporal';
import { addService, nowSec, service } from '../reconcile/rows';

const env = devServerForFile();
const hostsUsed: string[] = [];
const children: ReturnType<typeof startKeeper>[] = [];
let engine: ExtraEngine;

beforeAll(() => {
  // Commands and workers of this file look at an engine of their own, never the shared one.
  engine = extraEngine('ops-uninstall');
  process.env.DOCKER_HOST = engine.dockerHost;
});

// Registered after devServerForFile's, so it runs first, with the connection still open.
afterAll(async () => {
  for (const c of children) {
    if (c.child.exitCode !== null || c.child.signalCode !== null) continue;
    c.child.kill('SIGKILL');
    await c.exited;
  }
  for (const host of hostsUsed) {
    const f = await loopFootprint(env.client, host);
    for (const s of f.schedules) await deleteSchedule(env.client, s.scheduleId);
    for (const w of f.running) await terminateWorkflow(env.client, w.workflowId, 'test cleanup');
  }
  if (engine) stopEngine(engine);
});

const dev = () => inject('devServerAddress');
const uninstall = (s: Settings, ...args: string[]) =>
  keeperInProcess(['uninstall', '--db', s.db, '--host-id', s.hostId, '--temporal-address', dev(), ...args]);

/** An ah-made DB with keeper's tables, this host's schedules, an open circuit with its workflow, and a pending alert. */
async function hostWithInFlight(): Promise<{ settings: Settings; db: StateDb; sid: string; retryAt: number }> {
  const file = path.join(tempDir(), 'state.db');
  makeAhDb(file);
  const db = openStateDb(file);
  const settings = testSettings({ db: file, temporalAddress: dev() });
  hostsUsed.push(settings.hostId);
  recordHostStart(db, settings.hostId, nowSec());
  await ensureLoopSchedules(env.client, settings);
  const retryAt = nowSec() + 3600;
  const sid = addService(db, 't1', {
    status: 'crashed',
    containerId: null,
    crashCount: 5,
    circuitOpen: 1,
    circuitOpenCount: 1,
    circuitRetryAt: retryAt,
  });
  const host = settings.hostId;
  const common = { taskQueue: taskQueueFor(host), typedSearchAttributes: serviceAttributes(host, sid) };
  await env.client.workflow.start(circuitBreaker, { ...common, workflowId: ids.circuit(host, sid), args: [{ serviceId: sid }] });
  await env.client.workflow.start(notifyOperators, {
    ...common,
    workflowId: ids.notify(host, sid, 1, 'circuit-opened'),
    args: [{ kind: 'circuit-opened', hostId: host, serviceId: sid, opening: 1, escalation: 1, atMs: Date.now(), retryAt }],
  });
  await waitFor('visibility to list both workflows', async () => (await loopFootprint(env.client, host)).running.length >= 2);
  return { settings, db, sid, retryAt };
}

const statusOf = async (workflowId: string) => (await env.client.workflow.getHandle(workflowId).describe()).status.name;
const schedulesLeft = async (host: string) => (await loopFootprint(env.client, host)).schedules.length;

describe('keeper uninstall', () => {
  it('refuses with something in flight and no choice, listing it, and touches nothing', async () => {
    const { settings, sid } = await hostWithInFlight();
    const r = await uninstall(settings);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(
      /^keeper: nothing removed: 1 circuit workflow running: choose --circuits close\|hand-over\|leave; 1 alert pending: choose --alerts drop\|leave\n$/,
    );
    expect(r.out).toContain(`circuit ${sid}  open, retries at `);
    expect(r.out).toContain(`workflow ${ids.circuit(settings.hostId, sid)}`);
    expect(r.out).toContain(`alert ${ids.notify(settings.hostId, sid, 1, 'circuit-opened')}  pending delivery`);
    expect(await schedulesLeft(settings.hostId)).toBe(3);
    expect(await statusOf(ids.circuit(settings.hostId, sid))).toBe('RUNNING');
  });

  it("refuses while a worker polls the host's task queue", async () => {
    const { settings, db } = await hostWithInFlight();
    const worker = await keeperWorker(env, { settings, db, docker: new DockerClient() });
    const running = worker.run();
    try {
      await waitFor("the worker's first poll", async () => (await lastPollAgoMs(env.client, taskQueueFor(settings.hostId))) !== undefined);
      const r = await uninstall(settings, '--circuits', 'hand-over', '--alerts', 'drop');
      expect(r.code).toBe(1);
      expect(r.err).toMatch(
        new RegExp(`^keeper: a worker polls ${taskQueueFor(settings.hostId)} \\(last poll \\d+ s ago\\): stop it first`),
      );
      expect(await schedulesLeft(settings.hostId)).toBe(3);
    } finally {
      worker.shutdown();
      await running;
    }
  });

  it('hands circuits over and drops alerts; the row keeps the time for a keeper under another id; a second run finds nothing', async () => {
    const { settings, db, sid, retryAt } = await hostWithInFlight();
    const host = settings.hostId;
    const r = await uninstall(settings, '--circuits', 'hand-over', '--alerts', 'drop', '--json');
    expect(r.code, r.err).toBe(0);
    const report = JSON.parse(r.out);
    expect(report.schedulesDeleted.sort()).toEqual(LOOP_NAMES.map((l) => ids.schedule(host, l)).sort());
    expect(report.circuits.handedOver).toEqual([ids.circuit(host, sid)]);
    expect(report.alerts.dropped).toEqual([ids.notify(host, sid, 1, 'circuit-opened')]);
    expect(report.state).toEqual({ hostForgotten: true, tablesDropped: [] });
    expect(await schedulesLeft(host)).toBe(0);
    await expect(env.client.schedule.getHandle(ids.schedule(host, 'reconcile')).describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
    expect(await statusOf(ids.circuit(host, sid))).toBe('TERMINATED');
    expect(await statusOf(ids.notify(host, sid, 1, 'circuit-opened'))).toBe('TERMINATED');
    expect(service(db, sid)).toMatchObject({ circuit_open: 1, circuit_retry_at: retryAt });

    const again = await uninstall(settings);
    expect(again.code, again.err).toBe(0);
    expect(again.out).toBe(`nothing to remove for host ${host}: no schedules, no workflows, no keeper state of it\n`);

    // Whatever runs next recovers the handed-over circuit from its row once the time has come.
    db.prepare('UPDATE services SET circuit_retry_at = ? WHERE id = ?').run(nowSec() - 1, sid);
    const next = testSettings({ db: settings.db });
    hostsUsed.push(next.hostId);
    const tick = await keeperInProcess([
      'reconcile',
      '--once',
      '--json',
      '--db',
      settings.db,
      '--host-id',
      next.hostId,
      '--temporal-address',
      dev(),
    ]);
    expect(tick.code, tick.err).toBe(0);
    expect(JSON.parse(tick.out)).toMatchObject({ circuitsExpired: 1 });
    expect(service(db, sid)).toMatchObject({ circuit_open: 0, status: 'stopped' });
    db.close();
  }, 120_000);

  it('closes circuits now with --circuits close (the command runs the recovery)', async () => {
    const { settings, db, sid } = await hostWithInFlight();
    const r = await uninstall(settings, '--circuits', 'close', '--alerts', 'drop');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`circuit ${sid}  closed, service stopped`);
    expect(service(db, sid)).toMatchObject({ circuit_open: 0, crash_count: 0 });
    expect(await statusOf(ids.circuit(settings.hostId, sid))).toBe('COMPLETED');
    expect(await schedulesLeft(settings.hostId)).toBe(0);
    db.close();
  }, 120_000);

  it('leaves circuits and alerts running with --circuits leave --alerts leave, and says they need a worker', async () => {
    const { settings, db, sid } = await hostWithInFlight();
    const host = settings.hostId;
    const r = await uninstall(settings, '--circuits', 'leave', '--alerts', 'leave');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`circuit ${ids.circuit(host, sid)}  left running: it needs a worker polling ${taskQueueFor(host)}`);
    expect(r.out).toContain(
      `alert ${ids.notify(host, sid, 1, 'circuit-opened')}  left running: it needs a worker polling ${taskQueueFor(host)}`,
    );
    expect(await statusOf(ids.circuit(host, sid))).toBe('RUNNING');
    expect(await schedulesLeft(host)).toBe(0);
    db.close();
  });

  it("--purge-state drops keeper_* tables of an ah-made DB and nothing of ah's; twice is harmless", async () => {
    const file = path.join(tempDir(), 'state.db');
    makeAhDb(file);
    const db = openStateDb(file);
    const settings = testSettings({ db: file });
    hostsUsed.push(settings.hostId);
    recordHostStart(db, settings.hostId, nowSec());
    recordHostStart(db, 'other-host', nowSec());
    await ensureLoopSchedules(env.client, settings);
    db.prepare(`INSERT INTO keeper_reported_problems (subject, problem, first_seen) VALUES ('service:s1', 'x', 1)`).run();
    const keeperTables = () => db.prepare(`SELECT name FROM sqlite_master WHERE name LIKE 'keeper%'`).pluck().all() as string[];
    expect(keeperTables().length).toBeGreaterThan(10);
    const ahBefore = ahSnapshot(file);

    // Another host id still keeps its state in keeper's tables: refused, nothing removed.
    const refused = await uninstall(settings, '--purge-state');
    expect(refused.code).toBe(2);
    expect(refused.err).toContain('would drop the keeper state of host id other-host too; run keeper uninstall --host-id other-host first');
    expect(await schedulesLeft(settings.hostId)).toBe(3);

    db.prepare(`DELETE FROM keeper_hosts WHERE host_id = 'other-host'`).run();
    const r = await uninstall(settings, '--purge-state');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/keeper state\s+dropped \d+ keeper_\* tables; ah's tables untouched/);
    expect(keeperTables()).toEqual([]);
    expect(ahSnapshot(file)).toEqual(ahBefore);

    const again = await uninstall(settings, '--purge-state');
    expect(again.code, again.err).toBe(0);
    expect(again.out).toContain('nothing to remove');
    expect(keeperTables()).toEqual([]);
    expect(ahSnapshot(file)).toEqual(ahBefore);
    db.close();
  });

  it("a worker started under a new host id warns of the old id's schedules until keeper uninstall --host-id OLD", async () => {
    const file = path.join(tempDir(), 'state.db');
    makeAhDb(file);
    const [oldId, newId] = [uniqueId('old-'), uniqueId('new-')];
    hostsUsed.push(oldId, newId);
    const workerEnv = { TEMPORAL_ADDRESS: dev(), DOCKER_HOST: engine.dockerHost, KEEPER_METRICS_PORT: '0', KEEPER_LOG_FORMAT: 'json' };
    const runWorker = async (hostId: string) => {
      const w = startKeeper(['worker', '--db', file, '--host-id', hostId], workerEnv);
      children.push(w);
      await w.waitForOutput(/keeper worker started/, 90_000);
      w.child.kill('SIGTERM');
      expect(await w.exited).toBe(0);
      return w.output.split('\n').filter((l) => l.includes('was used by keeper host id'));
    };
    expect(await runWorker(oldId)).toEqual([]);
    const warned = await runWorker(newId);
    expect(warned).toHaveLength(1);
    expect(JSON.parse(warned[0]).msg).toMatch(
      new RegExp(
        `^this state DB was used by keeper host id ${oldId} \\(last started .*\\), whose 3 schedules( and \\d+ running workflows?)? are still on Temporal .*remove them with: keeper uninstall --host-id ${oldId} --db ${file}$`,
      ),
    );

    const removed = await keeperInProcess(['uninstall', '--db', file, '--host-id', oldId, '--temporal-address', dev()]);
    expect(removed.code, removed.err).toBe(0);
    expect(removed.out).toContain(`schedules deleted  ${ids.schedule(oldId, 'reconcile')}`);
    expect(await runWorker(newId)).toEqual([]);
  }, 240_000);

  it("with no Temporal configured and the worker stopped, it serves the embedded server's temporal.db itself", async () => {
    const dir = tempDir();
    const file = path.join(dir, 'state.db');
    makeAhDb(file);
    const settings = testSettings({ db: file });
    // The embedded server of a stopped `npm start`: its state in temporal.db next to the state DB, nobody serving it.
    const onFile = async <T>(fn: (client: Client) => Promise<T>): Promise<T> => {
      const server = await startDevServer({ dbFile: path.join(dir, 'temporal.db') });
      const connection = await Connection.connect({ address: server.address });
      try {
        return await fn(new Client({ connection }));
      } finally {
        await connection.close();
        await server.stop();
      }
    };
    await onFile((client) => ensureLoopSchedules(client, settings));
    expect(process.env.TEMPORAL_ADDRESS ?? '').toBe('');

    const r = await keeperInProcess(['uninstall', '--db', file, '--host-id', settings.hostId]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`schedules deleted  ${LOOP_NAMES.map((l) => ids.schedule(settings.hostId, l)).join(', ')}`);
    expect(await onFile(async (client) => (await loopFootprint(client, settings.hostId)).schedules)).toEqual([]);
  }, 120_000);
});
