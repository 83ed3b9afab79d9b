/** keeper_hosts: the host ids keeper workers ran under against this state DB (see keeper_1702). */
import { KEEPER_MIGRATIONS } from './keeper-schema';
import type { StateDb } from './open';

export interface RecordedHost {
  hostId: string;
  firstSeen: number; // unix seconds
  lastSeen: number;
}

/** Records a worker start under `hostId` and returns the other ids recorded against this DB, oldest first. */
export function recordHostStart(db: StateDb, hostId: string, now: number): RecordedHost[] {
  db.prepare(
    `INSERT INTO keeper_hosts (host_id, first_seen, last_seen) VALUES (?, ?, ?)
              ON CONFLICT(host_id) DO UPDATE SET last_seen = excluded.last_seen`,
  ).run(hostId, now, now);
  return recordedHosts(db).filter((h) => h.hostId !== hostId);
}

export function recordedHosts(db: StateDb): RecordedHost[] {
  if (!hasKeeperTable(db, 'keeper_hosts')) return [];
  return db
    .prepare('SELECT host_id AS hostId, first_seen AS firstSeen, last_seen AS lastSeen FROM keeper_hosts ORDER BY first_seen, host_id')
    .all() as RecordedHost[];
}

/** Forgets a host id (keeper uninstall); true when it was recorded. */
export function forgetHost(db: StateDb, hostId: string): boolean {
  if (!hasKeeperTable(db, 'keeper_hosts')) return false;
  return db.prepare('DELETE FROM keeper_hosts WHERE host_id = ?').run(hostId).changes === 1;
}

/** When keeper first ran against this DB (unix seconds), or null when no worker start is recorded. */
export function keeperArrivedAt(db: StateDb): number | null {
  return (db.prepare('SELECT MIN(first_seen) FROM keeper_hosts').pluck().get() as number | null) ?? null;
}

/** keeper's own tables (`keeper_` and nothing else: `_` is escaped, as LIKE reads it as any character). */
export function keeperTableNames(db: StateDb): string[] {
  return db
    .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'keeper\\_%' ESCAPE '\\' ORDER BY name`)
    .pluck()
    .all() as string[];
}

export function hasKeeperTable(db: StateDb, name: string): boolean {
  return keeperTableNames(db).includes(name);
}

/** Names the migrations' SQL gives tables by `pattern`. */
const tablesNamed = (pattern: RegExp) => KEEPER_MIGRATIONS.flatMap((m) => [...m.sql.matchAll(pattern)].map((x) => x[1]));
/** A table a migration rebuilds under a name of its own and renames when filled: that name never stays. */
const RENAMED_AWAY = new Set(tablesNamed(/ALTER TABLE (keeper_\w+) RENAME TO/g));

/** The tables keeper's own migrations create, and the table that records them: names from code, never from the DB. */
export const KEEPER_TABLES: readonly string[] = [
  ...new Set(tablesNamed(/CREATE TABLE (keeper_\w+)/g).filter((t) => !RENAMED_AWAY.has(t))),
  'keeper_migrations',
];

/**
 * Drops keeper's tables (their indexes go with them) in one transaction, and nothing else: ah's tables, rows and
 * schema_migrations are left exactly as they are. Returns the tables dropped.
 */
export function dropKeeperTables(db: StateDb): string[] {
  return db
    .transaction(() => {
      const present = new Set(keeperTableNames(db));
      const dropped = KEEPER_TABLES.filter((t) => present.has(t));
      for (const table of dropped) db.exec(`DROP TABLE ${table}`);
      return dropped;
    })
    .immediate();
}

/** Circuits open in the state DB (ah's columns only, so it answers on a DB without keeper's tables too). */
export function openCircuitRows(db: StateDb): { serviceId: string; escalation: number; retryAt: number | null }[] {
  return db
    .prepare(
      `SELECT id AS serviceId, circuit_open_count AS escalation, circuit_retry_at AS retryAt FROM services
                     WHERE circuit_open = 1 ORDER BY id`,
    )
    .all() as { serviceId: string; escalation: number; retryAt: number | null }[];
}
