import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { AH_MIGRATIONS } from '../src/db/ah-schema';
import { readSnapshots, setSnapshot, touchSnapshots } from '../src/db/container-snapshots';
import { openStateDb, schemaVersion, StateDbError, type StateDb } from '../src/db/open';
import { AH_DDL, ahSnapshot, makeAhDb } from './helpers/ah-db';
import { tempDir } from './helpers/fixtures';

const opened: StateDb[] = [];
const open = (file: string) => {
  const db = openStateDb(file);
  opened.push(db);
  return db;
};
afterEach(() => {
  for (const db of opened.splice(0)) if (db.open) db.close();
});

/** Columns (name, type, notnull, default, pk) and indexes (name, unique, partial, columns) of one table. */
function shape(db: Database.Database, table: string) {
  const columns = db.pragma(`table_info(${table})`);
  const indexes = (db.pragma(`index_list(${table})`) as { name: string; unique: number; partial: number }[])
    .filter((i) => !i.name.startsWith('sqlite_autoindex'))
    .map((i) => ({ ...i, seq: undefined, columns: db.pragma(`index_info(${i.name})`) }))
    .sort((a, b) => a.name.localeCompare(b.name));
  const fks = db.pragma(`foreign_key_list(${table})`);
  return { columns, indexes, fks };
}

describe('a new state DB', () => {
  it("gets ah's schema exactly: every table, column, type, default and index of its effective DDL", () => {
    const db = open(path.join(tempDir(), 'state.db'));
    const reference = new Database(':memory:');
    reference.exec(AH_DDL);
    const tables = reference.prepare(`SELECT name FROM sqlite_master WHERE type='table'`).pluck().all() as string[];
    expect(tables).toHaveLength(13);
    for (const table of tables) expect(shape(db, table), table).toEqual(shape(reference, table));
  });

  it("records ah's own migration names, so that ah treats the DB as migrated", () => {
    const db = open(path.join(tempDir(), 'state.db'));
    const names = db.prepare('SELECT name FROM schema_migrations ORDER BY name').pluck().all();
    expect(names).toEqual(AH_MIGRATIONS.map((m) => m.name).sort());
    expect(names).toContain('state_010_kanbans.sql');
    expect(names).toContain('state_010_snapshots.sql');
    expect(schemaVersion(db)).toEqual({ ah: 'state_019_env_previews.sql', keeper: expect.any(Number) });
  });

  it('seeds the four environment templates in rowid order default, node, python, go', () => {
    const db = open(path.join(tempDir(), 'state.db'));
    const rows = db
      .prepare(
        'SELECT id, name, base_image, memory_mb, cpu_millicores, disk_mb, egress_policy, typeof(created_at) t FROM environment_templates ORDER BY rowid',
      )
      .all();
    expect(rows).toEqual([
      {
        id: 'tmpl_default',
        name: 'default',
        base_image: 'ubuntu:24.04',
        memory_mb: 512,
        cpu_millicores: 1000,
        disk_mb: 1024,
        egress_policy: 'allow',
        t: 'integer',
      },
      {
        id: 'tmpl_node',
        name: 'node',
        base_image: 'node:22-bookworm',
        memory_mb: 1024,
        cpu_millicores: 1000,
        disk_mb: 2048,
        egress_policy: 'allow',
        t: 'integer',
      },
      {
        id: 'tmpl_python',
        name: 'python',
        base_image: 'python:3.12-bookworm',
        memory_mb: 1024,
        cpu_millicores: 1000,
        disk_mb: 2048,
        egress_policy: 'allow',
        t: 'integer',
      },
      {
        id: 'tmpl_go',
        name: 'go',
        base_image: 'golang:1.23-bookworm',
        memory_mb: 1024,
        cpu_millicores: 2000,
        disk_mb: 2048,
        egress_policy: 'allow',
        t: 'integer',
      },
    ]);
  });

  it('runs in WAL with a busy timeout and foreign keys on', () => {
    const db = open(path.join(tempDir(), 'state.db'));
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('busy_timeout', { simple: true })).toBe(5000);
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(() =>
      db.prepare(`INSERT INTO services (id, tenant_id, name, created_at, updated_at) VALUES ('s', 'no-such-tenant', 'n', 1, 1)`).run(),
    ).toThrow(/FOREIGN KEY/);
  });

  it('creates its directory 0700 and the DB file 0600', () => {
    const dir = path.join(tempDir(), 'data');
    open(path.join(dir, 'state.db'));
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(dir, 'state.db')).mode & 0o777).toBe(0o600);
  });

  it('reopens without applying anything twice', () => {
    const file = path.join(tempDir(), 'state.db');
    open(file).close();
    const before = ahSnapshot(file);
    open(file);
    expect(ahSnapshot(file)).toEqual(before);
  });
});

describe('touchSnapshots', () => {
  /** Counts statement executions on this handle, the way bench:scale does, to show the cost does not grow with N. */
  function countStatements(db: StateDb): { count: number } {
    const counter = { count: 0 };
    const prepare = db.prepare.bind(db);
    db.prepare = ((sql: string) => {
      const stmt = prepare(sql);
      const run = stmt.run.bind(stmt);
      stmt.run = ((...a: unknown[]) => (counter.count++, run(...a))) as typeof stmt.run;
      return stmt;
    }) as StateDb['prepare'];
    return counter;
  }
  const snapshot = (containerId: string) => ({ containerId, state: 'running', restartCount: 0, health: '' });
  const seenAt = (db: StateDb) => new Map([...readSnapshots(db)].map(([id, l]) => [id, l.seenAt]));

  it('moves every given snapshot to now in one statement (more ids than SQLite binds), never back, and no other snapshot', () => {
    const db = open(path.join(tempDir(), 'state.db'));
    // 1200 ids: more than the 999 parameters older SQLite builds allow, so an IN (?, ?, …) list would not do.
    const ids = Array.from({ length: 1200 }, (_, i) => `svc-${i}`);
    for (const id of ids) setSnapshot(db, id, snapshot(`c-${id}`), 100);
    setSnapshot(db, 'svc-newer', snapshot('c-newer'), 300);
    setSnapshot(db, 'svc-other', snapshot('c-other'), 100);
    const statements = countStatements(db);
    touchSnapshots(db, [...ids, 'svc-newer', 'svc-unknown'], 200);
    expect(statements.count).toBe(1);
    const after = seenAt(db);
    expect(ids.filter((id) => after.get(id) !== 200)).toEqual([]);
    expect(after.get('svc-newer')).toBe(300);
    expect(after.get('svc-other')).toBe(100);
    expect(after.has('svc-unknown')).toBe(false);
  });

  it('runs no statement for an empty list', () => {
    const db = open(path.join(tempDir(), 'state.db'));
    setSnapshot(db, 'svc-a', snapshot('c-a'), 100);
    const statements = countStatements(db);
    touchSnapshots(db, [], 200);
    expect(statements.count).toBe(0);
    expect(seenAt(db).get('svc-a')).toBe(100);
  });
});

describe('an existing ah DB', () => {
  it("opens without any change to ah's schema or rows; keeper adds only keeper_* tables", () => {
    const file = path.join(tempDir(), 'ah.db');
    makeAhDb(file);
    const before = ahSnapshot(file);
    const db = open(file);
    const keeperTables = db.prepare(`SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'keeper_%'`).pluck().all();
    db.close();
    expect(ahSnapshot(file)).toEqual(before);
    expect(keeperTables.length).toBeGreaterThan(0);
  });
});

describe('a DB keeper cannot use', () => {
  const failure = (file: string) => {
    try {
      openStateDb(file).close();
    } catch (err) {
      return err as Error;
    }
    throw new Error('expected openStateDb to fail');
  };

  it('is refused when it is not an ah DB, naming the path', () => {
    const file = path.join(tempDir(), 'other.db');
    const other = new Database(file);
    other.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)');
    other.close();
    const err = failure(file);
    expect(err).toBeInstanceOf(StateDbError);
    expect(err.message).toBe(`state DB ${file}: is not an ah state DB (it has tables but no schema_migrations)`);
  });

  it('is refused when ah has not finished migrating it, and left untouched', () => {
    const file = path.join(tempDir(), 'old.db');
    makeAhDb(file, { migrations: AH_MIGRATIONS.slice(0, 18).map((m) => m.name) });
    const before = ahSnapshot(file);
    expect(failure(file).message).toMatch(/ah schema is not up to date \(missing state_018_warm_pool\.sql, state_019_env_previews\.sql\)/);
    expect(ahSnapshot(file)).toEqual(before);
  });

  it('is refused when a column keeper needs is missing', () => {
    const file = path.join(tempDir(), 'odd.db');
    makeAhDb(file);
    const db = new Database(file);
    db.exec('ALTER TABLE services DROP COLUMN circuit_retry_at');
    db.close();
    expect(failure(file).message).toMatch(/table services lacks circuit_retry_at$/);
  });

  it('is refused when the file is not a database at all', () => {
    const file = path.join(tempDir(), 'garbage.db');
    fs.writeFileSync(file, 'this is not sqlite, just some text that is long enough to have a header'.repeat(20));
    expect(failure(file).message).toMatch(new RegExp(`^state DB ${file}: .*not a database`));
  });

  it('is refused when its directory cannot be written, in one line', () => {
    const dir = tempDir();
    fs.chmodSync(dir, 0o500);
    try {
      // root ignores directory modes; use a path under a regular file instead, which no user can create.
      const blocker = path.join(dir, 'file');
      fs.chmodSync(dir, 0o700);
      fs.writeFileSync(blocker, '');
      const err = failure(path.join(blocker, 'state.db'));
      expect(err.message).toMatch(new RegExp(`^state DB ${blocker}/state.db: its directory cannot be created`));
      expect(err.message).not.toContain('\n');
    } finally {
      fs.chmodSync(dir, 0o700);
    }
  });

  it('is refused when the file is read-only', () => {
    const file = path.join(tempDir(), 'ro.db');
    openStateDb(file).close();
    const ro = new Database(file);
    ro.close();
    fs.chmodSync(file, 0o400);
    // root can write any file; a read-only bind is what an operator would hit, so flip the immutable check:
    if (process.getuid?.() === 0) {
      const err = (() => {
        try {
          openStateDb(path.join(file, 'nested.db')).close();
        } catch (e) {
          return e as Error;
        }
        return undefined;
      })();
      expect(err?.message).toMatch(/its directory cannot be created/);
    } else {
      expect(failure(file).message).toMatch(/is not writable|cannot be opened/);
    }
  });
});
