/**
 * Online copies of a SQLite file with SQLite's backup API: consistent (one snapshot of the source, whatever other
 * connections write meanwhile) and safe while the worker and ah write, since the source is only read. The copy is
 * written under a temporary name in the destination's directory and then linked to its name, which fails if the
 * name exists: a file that is there is never overwritten, and nothing half-written ever carries the name.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { oneLine } from '../text';
import { BUSY_TIMEOUT_MS, StateDbError } from './open';

/** The largest step better-sqlite3 accepts: every page left. */
const ALL_REMAINING_PAGES = 0x7fffffff;

export interface CopyResult {
  /** Absolute path of the copy. */
  path: string;
  bytes: number;
  pages: number;
  pageSizeBytes: number;
}

/** Copies the SQLite file `sourcePath` to `destPath`, which must not exist. */
export async function copySqliteOnline(sourcePath: string, destPath: string): Promise<CopyResult> {
  const source = path.resolve(sourcePath);
  const dest = path.resolve(destPath);
  if (!fs.existsSync(source)) throw new StateDbError(`${source} does not exist`);
  refuseExisting(dest);
  const temp = path.join(path.dirname(dest), `.${path.basename(dest)}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`);
  const db = new Database(source, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
  try {
    const pageSizeBytes = db.pragma('page_size', { simple: true }) as number;
    // Stepwise, a copy restarts whenever another connection writes between two steps, and may never end under a
    // busy writer; the rest in one step is one read transaction, which in WAL mode holds up no writer.
    const { totalPages } = await db.backup(temp, { progress: () => ALL_REMAINING_PAGES });
    checkCopy(temp);
    fs.chmodSync(temp, 0o600); // as the state DB: crash records hold tenants' log lines
    fsyncFile(temp);
    publish(temp, dest);
    return { path: dest, bytes: fs.statSync(dest).size, pages: totalPages, pageSizeBytes };
  } catch (err) {
    if (err instanceof StateDbError) throw err;
    throw new StateDbError(`copying ${source} to ${dest} failed (${oneLine(err)})`);
  } finally {
    db.close();
    for (const f of [temp, `${temp}-wal`, `${temp}-shm`, `${temp}-journal`]) fs.rmSync(f, { force: true });
  }
}

function refuseExisting(dest: string): void {
  if (fs.existsSync(dest)) throw new StateDbError(`${dest} exists; keeper never overwrites a file: name a new one`);
  if (!fs.existsSync(path.dirname(dest))) throw new StateDbError(`directory ${path.dirname(dest)} does not exist`);
}

/**
 * The copy leaves WAL mode (one self-contained file; a state DB opened by keeper goes back to WAL), and must read
 * back whole before it takes its name.
 */
function checkCopy(file: string): void {
  const copy = new Database(file, { fileMustExist: true });
  try {
    copy.pragma('journal_mode = DELETE');
    const verdict = copy.pragma('quick_check', { simple: true });
    if (verdict !== 'ok') throw new StateDbError(`the copy fails SQLite's quick_check (${String(verdict)})`);
  } finally {
    copy.close();
  }
}

function fsyncFile(file: string): void {
  const fd = fs.openSync(file, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** link(2) fails with EEXIST instead of replacing: a file that appeared meanwhile is still not overwritten. */
function publish(temp: string, dest: string): void {
  try {
    fs.linkSync(temp, dest);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') refuseExisting(dest);
    throw err;
  }
  const dir = fs.openSync(path.dirname(dest), 'r');
  try {
    fs.fsyncSync(dir);
  } finally {
    fs.closeSync(dir);
  }
}

/**
 * Where a restore may put a copy: the DB file must not exist, nor a WAL or shared-memory file of an earlier DB
 * there (SQLite would apply an old WAL to the restored file). A live DB always has its file, so it is refused too.
 */
export function refuseLiveDb(dbPath: string): void {
  const file = path.resolve(dbPath);
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    if (fs.existsSync(f)) {
      throw new StateDbError(
        `${f} exists; restore never overwrites a state DB: stop the worker, move the old DB (and its -wal, -shm) aside, then restore`,
      );
    }
  }
}

/** A backup a restore may use: a SQLite file that passes quick_check and carries ah's schema_migrations. */
export function checkBackup(backupPath: string): void {
  const file = path.resolve(backupPath);
  if (!fs.existsSync(file)) throw new StateDbError(`backup ${file} does not exist`);
  let db: Database.Database | undefined;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    const verdict = db.pragma('quick_check', { simple: true });
    if (verdict !== 'ok') throw new StateDbError(`backup ${file} fails SQLite's quick_check (${String(verdict)})`);
    const ah = db.prepare(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).pluck().get();
    if (ah !== 1) throw new StateDbError(`backup ${file} is not a state DB (no schema_migrations table)`);
  } catch (err) {
    if (err instanceof StateDbError) throw err;
    throw new StateDbError(`backup ${file} cannot be read as SQLite (${oneLine(err)})`);
  } finally {
    db?.close();
  }
}
