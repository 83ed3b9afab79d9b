/**
 * keeper_3001 renames keeper_container_looks to keeper_container_snapshots (keeper's snapshot of each service's
 * container: what a crash is counted against by compare-and-set) on state DBs as earlier builds left them. A newer
 * CLI may migrate the DB under an older worker, which goes on reading and writing keeper_container_looks: the two
 * tables stay equal both ways, in the same statement, so a crash is counted once whichever build counts it. The
 * older builds' statements are their own, verbatim (src/db/looks.ts before keeper_3001). Real SQLite files.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import {
  readSnapshots,
  setSnapshot,
  snapshotIsStill,
  swapSnapshot,
  touchSnapshots,
  pruneSnapshots,
} from '../../src/db/container-snapshots';
import { dropKeeperTables } from '../../src/db/keeper-hosts';
import { KEEPER_MIGRATIONS } from '../../src/db/keeper-schema';
import { openStateDb, type StateDb } from '../../src/db/open';
import { makeAhDb } from '../helpers/ah-db';
import { tempDir } from '../helpers/fixtures';

/** What an older build runs on keeper_container_looks, as it runs it. */
const OLDER = {
  firstLook: `INSERT INTO keeper_container_looks (service_id, container_id, state, restart_count, health, looked_at)
                VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(service_id) DO NOTHING`,
  swap: `UPDATE keeper_container_looks SET container_id = ?, state = ?, restart_count = ?, health = ?, looked_at = ?
              WHERE service_id = ? AND container_id = ? AND state = ? AND restart_count = ? AND health = ?`,
  touch: `UPDATE keeper_container_looks SET looked_at = ?
              WHERE service_id IN (SELECT value FROM json_each(?)) AND looked_at < ?`,
  set: `INSERT INTO keeper_container_looks (service_id, container_id, state, restart_count, health, looked_at)
              VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(service_id) DO UPDATE SET container_id = excluded.container_id,
              state = excluded.state, restart_count = excluded.restart_count, health = excluded.health, looked_at = excluded.looked_at`,
  prune: 'DELETE FROM keeper_container_looks WHERE service_id NOT IN (SELECT id FROM services)',
  read: 'SELECT service_id, container_id, state, restart_count, health, looked_at FROM keeper_container_looks ORDER BY service_id',
};

/** An ah state DB with keeper's migrations applied up to, not including, keeper_3001, as the builds before left it. */
function dbAsLeftBefore3001(): { file: string; raw: Database.Database } {
  const file = path.join(tempDir(), 'state.db');
  makeAhDb(file);
  const raw = new Database(file);
  raw.exec('CREATE TABLE keeper_migrations ( name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL )');
  for (const m of KEEPER_MIGRATIONS.slice(
    0,
    KEEPER_MIGRATIONS.findIndex((x) => x.name === 'keeper_3001_container_snapshots'),
  )) {
    raw.exec(m.sql);
    raw.prepare('INSERT INTO keeper_migrations (name, applied_at) VALUES (?, 1700000000)').run(m.name);
  }
  return { file, raw };
}

const service = (db: Database.Database | StateDb, id: string) =>
  db
    .prepare(
      `INSERT INTO services (id, tenant_id, name, status, created_at, updated_at, crash_count, circuit_open, circuit_open_count)
       VALUES (?, 't1', ?, 'running', 1700000000, 1700000000, 0, 0, 0)`,
    )
    .run(id, id);

const running = (containerId: string, restartCount = 0) => ({ containerId, state: 'running', restartCount, health: '' });
/** Both tables, row by row, as the older build reads its own (`looked_at`) and this one its own (`seen_at`). */
const olderRows = (db: StateDb) => db.prepare(OLDER.read).all();
const newerRows = (db: StateDb) =>
  [...readSnapshots(db)]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([id, s]) => ({
      service_id: id,
      container_id: s.containerId,
      state: s.state,
      restart_count: s.restartCount,
      health: s.health,
      looked_at: s.seenAt,
    }));

function migrated(): StateDb {
  const { file, raw } = dbAsLeftBefore3001();
  for (const id of ['sv1', 'sv2']) service(raw, id);
  raw.prepare(OLDER.firstLook).run('sv1', 'c1', 'running', 3, 'healthy', 100);
  raw.prepare(OLDER.firstLook).run('sv2', 'c2', 'exited', 0, '', 110);
  raw.close();
  return openStateDb(file);
}

describe('keeper_3001: container snapshots', () => {
  it('carries every row of keeper_container_looks over, its time as seen_at', () => {
    const db = migrated();
    expect([...readSnapshots(db)]).toEqual([
      ['sv1', { containerId: 'c1', state: 'running', restartCount: 3, health: 'healthy', seenAt: 100 }],
      ['sv2', { containerId: 'c2', state: 'exited', restartCount: 0, health: '', seenAt: 110 }],
    ]);
    expect(olderRows(db)).toEqual(newerRows(db));
  });

  it("keeps an older worker's writes in this build's table: a first look, a swap, a touch, a set, a prune", () => {
    const db = migrated();
    service(db, 'sv3');
    db.prepare(OLDER.firstLook).run('sv3', 'c3', 'running', 0, '', 120);
    expect(db.prepare(OLDER.swap).run('c1', 'running', 4, 'healthy', 130, 'sv1', 'c1', 'running', 3, 'healthy').changes).toBe(1);
    db.prepare(OLDER.touch).run(140, JSON.stringify(['sv2', 'sv3']), 140);
    db.prepare(OLDER.set).run('sv2', 'c2b', 'running', 0, '', 150);
    db.prepare("DELETE FROM services WHERE id = 'sv3'").run();
    expect(db.prepare(OLDER.prune).run().changes).toBe(1);
    expect(newerRows(db)).toEqual([
      { service_id: 'sv1', container_id: 'c1', state: 'running', restart_count: 4, health: 'healthy', looked_at: 130 },
      { service_id: 'sv2', container_id: 'c2b', state: 'running', restart_count: 0, health: '', looked_at: 150 },
    ]);
    expect(olderRows(db)).toEqual(newerRows(db));
  });

  it("keeps this build's writes in the older worker's table, so neither counts a crash the other counted", () => {
    const db = migrated();
    service(db, 'sv3');
    expect(swapSnapshot(db, 'sv3', null, running('c3'), 200)).toBe(true);
    // This build counts s1's death: the swap from RestartCount 3 to 4.
    expect(swapSnapshot(db, 'sv1', { ...running('c1', 3), health: 'healthy' }, { ...running('c1', 4), health: 'healthy' }, 210)).toBe(true);
    // The older worker saw RestartCount 3 too: its compare-and-set finds the row changed, and counts nothing.
    expect(db.prepare(OLDER.swap).run('c1', 'running', 4, 'healthy', 211, 'sv1', 'c1', 'running', 3, 'healthy').changes).toBe(0);
    touchSnapshots(db, ['sv3'], 220);
    setSnapshot(db, 'sv2', running('c2c'), 230);
    db.prepare("DELETE FROM services WHERE id = 'sv3'").run();
    expect(pruneSnapshots(db)).toBe(1);
    expect(olderRows(db)).toEqual([
      { service_id: 'sv1', container_id: 'c1', state: 'running', restart_count: 4, health: 'healthy', looked_at: 210 },
      { service_id: 'sv2', container_id: 'c2c', state: 'running', restart_count: 0, health: '', looked_at: 230 },
    ]);
    expect(olderRows(db)).toEqual(newerRows(db));
    // And the other way: an older worker's swap first, then this build's compare-and-set on what it saw fails.
    expect(db.prepare(OLDER.swap).run('c2c', 'exited', 0, '', 240, 'sv2', 'c2c', 'running', 0, '').changes).toBe(1);
    expect(snapshotIsStill(db, 'sv2', running('c2c'))).toBe(false);
    expect(swapSnapshot(db, 'sv2', running('c2c'), { ...running('c2c'), state: 'exited' }, 241)).toBe(false);
  });

  it('is dropped whole by keeper uninstall --purge-state: both tables, and their triggers with them', () => {
    const db = migrated();
    const dropped = dropKeeperTables(db);
    expect(dropped).toEqual(expect.arrayContaining(['keeper_container_looks', 'keeper_container_snapshots']));
    expect(db.prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger') AND name LIKE 'keeper%'").all()).toEqual([]);
  });
});
