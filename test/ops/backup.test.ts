/**
 * The restore drill. A real keeper worker ticks every second on its own engine (a crash loop that opens its
 * circuit, and a service that died once) while a second process writes keeper and ah tables in one transaction
 * after another; `keeper backup` copies the live DB several times. Every copy is consistent (each transaction
 * whole, every counted death with its record), `backup` never overwrites, and a copy restored into a fresh
 * directory and ticked there counts nothing twice: crash_count and keeper_crash_records stay as the copy had them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { deleteSchedule, terminateWorkflow } from '../../src/temporal/footprint';
import { loopFootprint } from '../../src/loops/schedules';
import { keeperInProcess } from '../helpers/cli';
import { extraEngine, stopEngine, type ExtraEngine } from '../helpers/engines';
import { EngineFixture, freshDb, tempDir, uniqueId, waitFor } from '../helpers/fixtures';
import { devServerForFile } from '../helpers/temporal';
import { startChildWorker, type ChildWorker } from '../reliability/helpers';
import { addService, addServiceWithExitedContainer, addTenant, runServiceContainer, service } from '../reconcile/rows';
import { DRILL_TENANT } from './writer-child';

let engine: ExtraEngine;
let fixture: EngineFixture;
const env = devServerForFile();
const hosts: string[] = [];
const processes: { kill(): Promise<void> }[] = [];

beforeAll(() => {
  // The worker, the commands and the fixture all use an engine of this file's own.
  engine = extraEngine('ops-backup');
  process.env.DOCKER_HOST = engine.dockerHost;
  fixture = new EngineFixture();
});

// Registered after devServerForFile's, so it runs first, with the connection still open.
afterAll(async () => {
  for (const p of processes) await p.kill();
  for (const host of hosts) {
    const f = await loopFootprint(env.client, host);
    for (const s of f.schedules) await deleteSchedule(env.client, s.scheduleId);
    for (const w of f.running) await terminateWorkflow(env.client, w.workflowId, 'test cleanup');
  }
  await fixture?.cleanup();
  if (engine) stopEngine(engine);
});

function startWriter(file: string): ChildProcess & { ready: Promise<void> } {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'writer-child.ts')], {
    env: { ...process.env, DRILL_DB: file },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d) => ((out += d), out.includes('writing') && resolve()));
    child.on('exit', (code) => reject(new Error(`writer exited (${code}) before writing`)));
  });
  processes.push({
    kill: async () =>
      void (
        child.exitCode === null &&
        child.signalCode === null &&
        (child.kill('SIGKILL'), await new Promise((r) => child.once('exit', r)))
      ),
  });
  return Object.assign(child, { ready });
}

interface Counted {
  crashCount: Record<string, number>;
  records: Record<string, number>;
}

/** What a copy holds: the writer's n in both tables, and each service's crash_count beside keeper's records of it. */
function readCopy(file: string): Counted & { keeperN: number; ahN: number } {
  const db = new Database(file, { readonly: true });
  try {
    const keeperN = db.prepare(`SELECT MAX(first_seen) FROM keeper_reported_problems WHERE subject = 'drill'`).pluck().get() as number;
    const ahN = Number(db.prepare('SELECT name FROM tenants WHERE id = ?').pluck().get(DRILL_TENANT));
    const crashCount = Object.fromEntries(
      (db.prepare('SELECT id, crash_count FROM services').all() as { id: string; crash_count: number }[]).map((r) => [r.id, r.crash_count]),
    );
    const records = Object.fromEntries(
      Object.keys(crashCount).map((id) => [
        id,
        db.prepare('SELECT COUNT(*) FROM keeper_crash_records WHERE service_id = ?').pluck().get(id) as number,
      ]),
    );
    return { keeperN, ahN, crashCount, records };
  } finally {
    db.close();
  }
}

describe('keeper backup and restore', () => {
  it('copies a DB a live worker and a second writer write, consistently; a restored copy counts nothing twice', async () => {
    const { db, file } = freshDb();
    const host = uniqueId('host-drill-');
    hosts.push(host);
    const tenant = addTenant(db);
    const died = await addServiceWithExitedContainer(fixture, db, tenant);
    const loopId = uniqueId('svc');
    const loopCid = await runServiceContainer(fixture, tenant, loopId, { cmd: ['sh', '-c', 'sleep 1; exit 1'] });
    addService(db, tenant, { containerId: loopCid }, loopId);
    const quiet = addService(db, tenant, {}); // no container: nothing to count

    const worker: ChildWorker = startChildWorker({
      TEMPORAL_ADDRESS: inject('devServerAddress'),
      KEEPER_TEST_BUNDLE: inject('workflowBundlePath'),
      KEEPER_TEST_SCHEDULES: '1',
      KEEPER_DB: file,
      KEEPER_HOST_ID: host,
      KEEPER_RECONCILE_INTERVAL: '1s',
      KEEPER_CRASH_THRESHOLD: '3',
      KEEPER_CIRCUIT_BACKOFF: '1h',
      DOCKER_HOST: engine.dockerHost,
    });
    processes.push(worker);
    await worker.ready();
    const writer = startWriter(file);
    await writer.ready;

    // Copies while the crash loop is being counted, then once it is settled (circuit open, container stopped).
    const dir = tempDir();
    const copies: string[] = [];
    const backup = async () => {
      const dest = path.join(dir, `copy-${copies.length}.db`);
      const r = await keeperInProcess(['backup', dest, '--db', file]);
      expect(r.code, r.err).toBe(0);
      const pages = Number(r.out.match(new RegExp(`^wrote ${dest}: \\d+ bytes, (\\d+) pages of \\d+ bytes\\n$`))?.[1]);
      expect(pages).toBeGreaterThan(1000);
      copies.push(dest);
    };
    await waitFor('the crash loop counted once', () => service(db, loopId).crash_count >= 1, 60_000);
    await backup();
    await backup();
    await waitFor(
      "the crash loop's circuit open and its container stopped",
      async () => service(db, loopId).circuit_open === 1 && (await fixture.docker.inspectContainer(loopCid)).status === 'exited',
      90_000,
    );
    await waitFor('the dead service counted', () => service(db, died.sid).crash_count === 1, 30_000);
    await backup();
    const seen = copies.map(readCopy);
    console.log(
      `drill: copies at writer transactions ${seen.map((c) => c.keeperN).join(', ')}; crash counts in the last ${JSON.stringify(seen.at(-1)!.crashCount)}`,
    );
    // The writer wrote between the copies: each was taken from a DB being written.
    seen.slice(1).forEach((c, i) => expect(c.keeperN).toBeGreaterThan(seen[i].keeperN));

    for (const copy of copies) {
      const c = readCopy(copy);
      expect(c.keeperN, copy).toBeGreaterThan(0);
      expect(c.ahN, `${copy}: the writer's transaction whole`).toBe(c.keeperN);
      expect(c.records, `${copy}: every counted death with its record`).toEqual(c.crashCount);
      expect(fs.statSync(copy).mode & 0o777).toBe(0o600);
    }
    const again = await keeperInProcess(['backup', copies[0], '--db', file]);
    expect(again.code).toBe(2);
    expect(again.err).toBe(`keeper: ${copies[0]} exists; keeper never overwrites a file: name a new one\n`);

    await worker.kill();
    await processes[processes.length - 1].kill();
    db.close();

    const last = readCopy(copies[copies.length - 1]);
    expect(last.crashCount).toMatchObject({ [died.sid]: 1, [quiet]: 0 });
    expect(last.crashCount[loopId]).toBeGreaterThanOrEqual(3);
    const restored = path.join(tempDir(), 'state.db');
    const r = await keeperInProcess(['restore', copies[copies.length - 1], '--db', restored]);
    expect(r.code, r.err).toBe(0);
    expect((await keeperInProcess(['restore', copies[0], '--db', restored])).code).toBe(2); // never over a DB

    const next = uniqueId('host-restored-');
    hosts.push(next);
    const tick = await keeperInProcess([
      'reconcile',
      '--once',
      '--json',
      '--db',
      restored,
      '--host-id',
      next,
      '--temporal-address',
      inject('devServerAddress'),
    ]);
    expect(tick.code, tick.err).toBe(0);
    expect(JSON.parse(tick.out)).toMatchObject({ dockerReachable: true, crashes: 0 });
    const after = readCopy(restored);
    expect(after.crashCount).toEqual(last.crashCount);
    expect(after.records).toEqual(last.records);
  }, 300_000);
});
