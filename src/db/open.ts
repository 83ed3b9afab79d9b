/**
 * Opening the state DB: WAL, busy_timeout and foreign keys on, ah's schema created when the file is new,
 * recognised (and left exactly as it is) when ah made it, and keeper's own `keeper_*` tables added.
 * Every way this can fail becomes one StateDbError line that names the path and the problem.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { AH_COLUMNS_KEEPER_NEEDS, AH_MIGRATIONS, type Migration } from './ah-schema';
import { KEEPER_MIGRATIONS } from './keeper-schema';
import { oneLine } from '../text';
import { unixSeconds } from '../time';

export type StateDb = Database.Database;

export class StateDbError extends Error {
  override name = 'StateDbError';
}

/** `create: false` and no DB at the path: the operator's typo, most likely (exit 2 in the CLI). */
export class StateDbMissingError extends StateDbError {
  override name = 'StateDbMissingError';
}

export const BUSY_TIMEOUT_MS = 5000;

export interface OpenOptions {
  /** Create the file and the ah schema when the DB does not exist yet (default true). */
  create?: boolean;
  /** Override busy_timeout, e.g. for tests that hold locks. */
  busyTimeoutMs?: number;
}

export function openStateDb(dbPath: string, options: OpenOptions = {}): StateDb {
  const file = path.resolve(dbPath);
  const fail = (problem: string): never => {
    throw new StateDbError(`state DB ${file}: ${problem}`);
  };
  const isNew = !fs.existsSync(file);
  if (isNew && options.create === false) {
    throw new StateDbMissingError(`state DB ${file} does not exist: only \`keeper worker\` creates one (check --db or KEEPER_DB)`);
  }
  if (isNew) ensureDataDir(path.dirname(file), fail);

  let db: StateDb;
  try {
    db = new Database(file, { fileMustExist: !isNew });
  } catch (err) {
    return fail(`cannot be opened (${oneLine(err)})`);
  }
  try {
    if (isNew) fs.chmodSync(file, 0o600);
    configure(db, options.busyTimeoutMs ?? BUSY_TIMEOUT_MS);
    assertWritable(db);
    ensureAhSchema(db);
    applyMigrations(db, 'keeper_migrations', KEEPER_MIGRATIONS);
    return db;
  } catch (err) {
    db.close();
    if (err instanceof StateDbError) throw new StateDbError(`state DB ${file}: ${err.message}`);
    return fail(oneLine(err));
  }
}

/**
 * Opens an existing state DB as it is: no schema is created and no migration applied (keeper uninstall must not
 * re-create the keeper_* tables it is about to drop, nor a second run the ones the first dropped).
 */
export function openStateDbAsIs(dbPath: string): StateDb {
  const file = path.resolve(dbPath);
  if (!fs.existsSync(file)) throw new StateDbError(`state DB ${file}: does not exist`);
  try {
    return new Database(file, { fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
  } catch (err) {
    throw new StateDbError(`state DB ${file}: cannot be opened (${oneLine(err)})`);
  }
}

function ensureDataDir(dir: string, fail: (p: string) => never): void {
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    fail(`its directory cannot be created (${oneLine(err)})`);
  }
}

/** How long a write waits inside SQLite for another writer's lock (synchronously: the event loop waits too). */
export function setBusyTimeout(db: StateDb, busyTimeoutMs: number): void {
  db.pragma(`busy_timeout = ${busyTimeoutMs}`);
}

function configure(db: StateDb, busyTimeoutMs: number): void {
  setBusyTimeout(db, busyTimeoutMs);
  const mode = db.pragma('journal_mode = WAL', { simple: true });
  if (String(mode).toLowerCase() !== 'wal') throw new StateDbError(`cannot switch to WAL (journal_mode=${mode})`);
  db.pragma('foreign_keys = ON');
}

function assertWritable(db: StateDb): void {
  try {
    db.exec('BEGIN IMMEDIATE; ROLLBACK;');
  } catch (err) {
    throw new StateDbError(`is not writable (${oneLine(err)})`);
  }
}

function tableNames(db: StateDb): Set<string> {
  const rows = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).all() as { name: string }[];
  return new Set(rows.map((r) => r.name));
}

/** A new DB gets all of ah's migrations in one transaction; an existing one must already be ah's, complete. */
function ensureAhSchema(db: StateDb): void {
  const tables = tableNames(db);
  if (tables.size === 0) {
    applyMigrations(db, 'schema_migrations', AH_MIGRATIONS);
    return;
  }
  if (!tables.has('schema_migrations')) {
    throw new StateDbError('is not an ah state DB (it has tables but no schema_migrations)');
  }
  const applied = new Set((db.prepare('SELECT name FROM schema_migrations').all() as { name: string }[]).map((r) => r.name));
  const missing = AH_MIGRATIONS.filter((m) => !applied.has(m.name)).map((m) => m.name);
  if (missing.length > 0) {
    throw new StateDbError(`ah schema is not up to date (missing ${missing.join(', ')}); let ah migrate it first`);
  }
  for (const [table, columns] of Object.entries(AH_COLUMNS_KEEPER_NEEDS)) {
    const have = new Set((db.pragma(`table_info(${table})`) as { name: string }[]).map((c) => c.name));
    const lacking = columns.filter((c) => !have.has(c));
    if (lacking.length > 0) {
      throw new StateDbError(`is not ah's schema: table ${table} lacks ${lacking.join(', ')}`);
    }
  }
}

/** Applies the migrations not yet recorded in `table`, all in one transaction. */
function applyMigrations(db: StateDb, table: string, migrations: Migration[]): void {
  db.exec(`CREATE TABLE IF NOT EXISTS ${table} ( name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL )`);
  const applied = new Set((db.prepare(`SELECT name FROM ${table}`).all() as { name: string }[]).map((r) => r.name));
  const record = db.prepare(`INSERT INTO ${table} (name, applied_at) VALUES (?, ?)`);
  const pending = migrations.filter((m) => !applied.has(m.name));
  if (pending.length === 0) return;
  db.transaction(() => {
    for (const m of pending) {
      db.exec(m.sql);
      record.run(m.name, unixSeconds());
    }
  })();
}

/** The newest ah migration applied, e.g. `state_019_env_previews.sql`, and the number of keeper's. */
export function schemaVersion(db: StateDb): { ah: string; keeper: number } {
  const ah = db.prepare('SELECT name FROM schema_migrations ORDER BY name DESC LIMIT 1').pluck().get() as string;
  const keeper = db.prepare('SELECT COUNT(*) FROM keeper_migrations').pluck().get() as number;
  return { ah, keeper };
}
