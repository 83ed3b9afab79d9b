/**
 * The migration that numbers circuit openings (keeper_2901) on state DBs as earlier builds left them: the build just
 * before it (circuit holds by generation, keeper_2801) and the previous release (no holds table at all). No open
 * circuit loses its hold: each one held before is held after, by its opening's number; an open circuit no workflow
 * held stays unheld (the next tick hands it over); and a run that began before the upgrade still closes its opening.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { heldOpening, unheldCircuits } from '../../src/db/circuit-holds';
import { KEEPER_MIGRATIONS } from '../../src/db/keeper-schema';
import { openStateDb, type StateDb } from '../../src/db/open';
import { readCircuit } from '../../src/db/services';
import { handOverCircuits, recoverCircuit } from '../../src/host/circuit';
import { makeAhDb } from '../helpers/ah-db';
import { testDeps, testSettings, tempDir } from '../helpers/fixtures';
import { MemoryEngine } from '../helpers/memory-engine';

const NOW = 1_900_000_000;
const RETRY = NOW + 1800;

/** An ah state DB with keeper's migrations applied up to, not including, `before`, as that build left it. */
function dbAsLeftBefore(before: string): { file: string; raw: Database.Database } {
  const file = path.join(tempDir(), 'state.db');
  makeAhDb(file);
  const raw = new Database(file);
  raw.exec('CREATE TABLE keeper_migrations ( name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL )');
  for (const m of KEEPER_MIGRATIONS.slice(
    0,
    KEEPER_MIGRATIONS.findIndex((x) => x.name === before),
  )) {
    raw.exec(m.sql);
    raw.prepare('INSERT INTO keeper_migrations (name, applied_at) VALUES (?, 1700000000)').run(m.name);
  }
  return { file, raw };
}

/** A services row: open (`count`, retrying at RETRY) or closed (`count` left escalated). */
function serviceRow(raw: Database.Database, id: string, open: boolean, count: number): void {
  raw
    .prepare(
      `INSERT INTO services (id, tenant_id, name, status, created_at, updated_at, crash_count, circuit_open, circuit_open_count, circuit_retry_at)
       VALUES (?, 't1', ?, 'crashed', 1700000000, 1700000000, 5, ?, ?, ?)`,
    )
    .run(id, id, open ? 1 : 0, count, open ? RETRY : null);
}

const opening = (raw: Database.Database, id: string, generation: number) =>
  raw.prepare('INSERT INTO keeper_circuit_openings (service_id, generation, opened_at) VALUES (?, ?, ?)').run(id, generation, NOW - 60);
const hold = (raw: Database.Database, id: string, generation: number) =>
  raw.prepare('INSERT INTO keeper_circuit_holds (service_id, generation, held_at) VALUES (?, ?, ?)').run(id, generation, NOW - 30);

function migrated(file: string, raw: Database.Database): StateDb {
  raw.close();
  return openStateDb(file);
}

/** keeper_circuit_openings' row of a service (`generation` is its escalation, under the older builds' name). */
const row = (db: StateDb, id: string) => db.prepare('SELECT * FROM keeper_circuit_openings WHERE service_id = ?').get(id);

describe('numbering circuit openings (keeper_2901)', () => {
  it('keeps every hold of an open circuit, by its opening, from the build just before it', () => {
    const { file, raw } = dbAsLeftBefore('keeper_2901_circuit_opening_numbers');
    serviceRow(raw, 'kept', true, 2); // keeper opened it (generation 2), its workflow holds it
    opening(raw, 'kept', 2);
    hold(raw, 'kept', 2);
    serviceRow(raw, 'ahs', true, 4); // ah opened it (at escalation 4); keeper's workflow took hold of it
    hold(raw, 'ahs', 4);
    serviceRow(raw, 'lost', true, 1); // keeper opened it, but its workflow never started
    opening(raw, 'lost', 1);
    serviceRow(raw, 'bare', true, 3); // ah opened it; no workflow yet
    serviceRow(raw, 'again', true, 2); // keeper opened generation 1; ah closed it and opened generation 2, held
    opening(raw, 'again', 1);
    hold(raw, 'again', 2);
    serviceRow(raw, 'closed', false, 3); // closed, still escalated: its old hold holds nothing
    opening(raw, 'closed', 3);
    hold(raw, 'closed', 3);
    serviceRow(raw, 'stale', true, 2); // open at generation 2, but the hold is of generation 1: not held
    opening(raw, 'stale', 2);
    hold(raw, 'stale', 1);
    const db = migrated(file, raw);
    try {
      expect(heldOpening(db, 'kept')).toBe(2);
      expect(row(db, 'kept')).toEqual({
        service_id: 'kept',
        opening: 2,
        generation: 2,
        retry_at: RETRY,
        opened_at: NOW - 60,
        taken_over_at: null,
      });
      expect(heldOpening(db, 'ahs')).toBe(1);
      expect(row(db, 'ahs')).toEqual({
        service_id: 'ahs',
        opening: 1,
        generation: 4,
        retry_at: RETRY,
        opened_at: null,
        taken_over_at: NOW - 30,
      });
      expect(heldOpening(db, 'again')).toBe(2);
      expect(row(db, 'again')).toMatchObject({ opening: 2, generation: 2, retry_at: RETRY, opened_at: NOW - 60, taken_over_at: NOW - 30 });
      expect(heldOpening(db, 'closed')).toBeUndefined();
      expect(row(db, 'closed')).toMatchObject({ opening: 3, generation: 3, retry_at: null });
      expect(heldOpening(db, 'stale')).toBeUndefined();
      // No open circuit held before is unheld now; the ones no workflow held are handed over by the next tick.
      expect(unheldCircuits(db)).toEqual([
        { serviceId: 'bare', escalation: 3, retryAt: RETRY },
        { serviceId: 'lost', opening: 1, escalation: 1, retryAt: RETRY },
        { serviceId: 'stale', opening: 2, escalation: 2, retryAt: RETRY },
      ]);
      expect(readCircuit(db, 'kept')).toMatchObject({ open: true, opening: 2, escalation: 2, openedAt: NOW - 60, takenOverAt: null });
    } finally {
      db.close();
    }
  });

  it("keeps the hold of the previous release's open circuit (no holds table yet), and its run still closes it", async () => {
    const { file, raw } = dbAsLeftBefore('keeper_1701_worker_config');
    serviceRow(raw, 'inflight', true, 1); // opened by the old build; its workflow waits on its timer
    opening(raw, 'inflight', 1);
    serviceRow(raw, 'bare', true, 2); // opened by ah
    const db = migrated(file, raw);
    try {
      expect(heldOpening(db, 'inflight')).toBe(1);
      expect(unheldCircuits(db).map((c) => c.serviceId)).toEqual(['bare']);
      const clock = { nowMs: () => (RETRY + 1) * 1000 };
      const deps = testDeps({ db, docker: new MemoryEngine(clock), settings: testSettings({ recovery: 'stop' }), clock });
      // The tick hands the bare one over: numbered (taken over), held by none yet.
      expect(handOverCircuits(deps, unheldCircuits(db))).toEqual([
        { serviceId: 'bare', opening: 1, escalation: 2, retryAt: RETRY, held: false },
      ]);
      // The old run's timer fires on the new build: it recovers by its generation and retry time (it knows no
      // opening), and closes its own; not a circuit at another retry time.
      const legacy = { serviceId: 'inflight', escalation: 1, trigger: 'auto_recovery' as const };
      expect(await recoverCircuit(deps, { ...legacy, retryAt: RETRY + 60 })).toEqual({ recovered: false, reopened: true });
      expect(await recoverCircuit(deps, { ...legacy, retryAt: RETRY })).toMatchObject({ recovered: true, status: 'stopped' });
      expect(readCircuit(db, 'inflight')).toMatchObject({ open: false, opening: 1 });
    } finally {
      db.close();
    }
  });

  it('leaves the tables as the builds before it write and read them: a newer CLI may migrate the DB under an older worker', () => {
    const { file, raw } = dbAsLeftBefore('keeper_1701_worker_config');
    serviceRow(raw, 'old', true, 1);
    const db = migrated(file, raw);
    try {
      // The previous release's opening (recordCrash) and decay reads, and the last build's hold, as they wrote them.
      db.prepare(
        `INSERT INTO keeper_circuit_openings (service_id, generation, opened_at) VALUES (?, ?, ?)
          ON CONFLICT(service_id) DO UPDATE SET generation = excluded.generation, opened_at = excluded.opened_at`,
      ).run('old', 1, NOW);
      expect(db.prepare('SELECT opened_at FROM keeper_circuit_openings WHERE service_id = ?').pluck().get('old')).toBe(NOW);
      db.prepare(
        `INSERT INTO keeper_circuit_holds (service_id, generation, held_at) VALUES (?, ?, ?)
          ON CONFLICT(service_id) DO UPDATE SET generation = excluded.generation, held_at = excluded.held_at`,
      ).run('old', 1, NOW);
      // What they wrote numbers nothing: the circuit is an opening keeper has not numbered, and the tick takes it over.
      expect(heldOpening(db, 'old')).toBeUndefined();
      expect(unheldCircuits(db)).toEqual([{ serviceId: 'old', escalation: 1, retryAt: RETRY }]);
      const clock = { nowMs: () => NOW * 1000 };
      const deps = testDeps({ db, docker: new MemoryEngine(clock), settings: testSettings(), clock });
      expect(handOverCircuits(deps, unheldCircuits(db)).map((c) => c.opening)).toEqual([1]);
    } finally {
      db.close();
    }
  });
});
