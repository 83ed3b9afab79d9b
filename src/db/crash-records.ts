/** keeper_crash_records: one row per counted death, its facts and its run's last lines (see keeper_1401). */
import fs from 'node:fs';
import { signalOf, deathReason } from '../policy/deaths/words';
import type { CountedDeath, DatedBy, SeenBy } from '../contracts/reconcile';
import type { RetainedRow } from '../policy/gc';
import type { StateDb } from './open';

/** A death's log tail as read from the engine, or why there is none. */
export interface LogTail {
  tail: string;
  note: string;
}

export interface CrashRecordRow {
  id: number;
  serviceId: string;
  containerId: string;
  diedAtMs: number | null;
  exitCode: number | null;
  oomKilled: boolean | null;
  signal: string | null;
  seenBy: SeenBy;
  /** null for records made before deaths were dated. */
  datedBy: DatedBy | null;
  engineError: string;
  reason: string;
  logTail: string;
  logNote: string;
  windowStart: number;
  recordedAt: number;
  expected: boolean;
}

const CRASH_RECORD_SELECT = `SELECT id, service_id AS serviceId, container_id AS containerId, died_at_ms AS diedAtMs, exit_code AS exitCode,
    oom_killed AS oomKilled, signal, seen_by AS seenBy, dated_by AS datedBy, engine_error AS engineError, reason, log_tail AS logTail,
    log_note AS logNote, window_start AS windowStart, recorded_at AS recordedAt, expected
  FROM keeper_crash_records`;

const toRow = (r: Omit<CrashRecordRow, 'oomKilled' | 'expected'> & { oomKilled: number | null; expected: number }): CrashRecordRow => ({
  ...r,
  oomKilled: r.oomKilled === null ? null : r.oomKilled === 1,
  expected: r.expected === 1,
});

/** Inserts one row per death, with the crash window each was counted in; call it inside the transaction that counts them. */
export function insertCrashRecords(
  db: StateDb,
  c: { serviceId: string; containerId: string; windowStarts: number[]; recordedAt: number },
  deaths: CountedDeath[],
  tails: LogTail[],
): void {
  const insert = db.prepare(`INSERT INTO keeper_crash_records (service_id, container_id, died_at_ms, exit_code, oom_killed, signal,
      seen_by, dated_by, engine_error, reason, log_tail, log_note, window_start, recorded_at, expected) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  deaths.forEach((d, i) => {
    const oom = d.oomKilled === null ? null : d.oomKilled ? 1 : 0;
    insert.run(
      c.serviceId,
      c.containerId,
      d.diedAtMs,
      d.exitCode,
      oom,
      signalOf(d.exitCode),
      d.seenBy,
      d.datedBy ?? null,
      d.engineError,
      deathReason(d),
      tails[i]?.tail ?? '',
      tails[i]?.note ?? '',
      c.windowStarts[i],
      c.recordedAt,
      d.expected ? 1 : 0,
    );
  });
}

/** A service's most recent deaths, newest first. */
export function listCrashRecords(db: StateDb, serviceId: string, limit: number): CrashRecordRow[] {
  const rows = db.prepare(`${CRASH_RECORD_SELECT} WHERE service_id = ? ORDER BY id DESC LIMIT ?`).all(serviceId, limit);
  return (rows as Parameters<typeof toRow>[0][]).map(toRow);
}

/** When keeper last recorded a death of this container of the service (unix seconds), or null when never. */
export function lastRecordedAt(db: StateDb, serviceId: string, containerId: string): number | null {
  const v = db
    .prepare('SELECT MAX(recorded_at) FROM keeper_crash_records WHERE service_id = ? AND container_id = ?')
    .pluck()
    .get(serviceId, containerId) as number | null;
  return v ?? null;
}

/** The deaths counted in one crash window (the ones that opened its circuit), oldest first, without their logs. */
export function deathsOfWindow(db: StateDb, serviceId: string, windowStart: number, limit: number): CrashRecordRow[] {
  const rows = db
    .prepare(
      `SELECT * FROM (${CRASH_RECORD_SELECT} WHERE service_id = ? AND window_start = ? AND expected = 0 ORDER BY id DESC LIMIT ?) ORDER BY id`,
    )
    .all(serviceId, windowStart, limit);
  return (rows as Parameters<typeof toRow>[0][]).map((r) => ({ ...toRow(r), logTail: '' }));
}

/**
 * Deaths recorded since `sinceSec` as exit 137 and not OOM-killed, with their time: those the engine's later `oom`
 * event may show were OOM kills (src/host/reconcile/oom-confirmations.ts).
 */
export interface AwaitingOom {
  id: number;
  containerId: string;
  diedAtMs: number;
}

export function deathsAwaitingOom(db: StateDb, sinceSec: number): AwaitingOom[] {
  return db
    .prepare(
      `SELECT id, container_id AS containerId, died_at_ms AS diedAtMs FROM keeper_crash_records
        WHERE exit_code = 137 AND oom_killed = 0 AND died_at_ms IS NOT NULL AND recorded_at >= ? ORDER BY id`,
    )
    .all(sinceSec) as AwaitingOom[];
}

/** The death was an OOM kill after all: its record says so, in its flag and its reason. Once: false when already. */
export function confirmOomKill(db: StateDb, id: number): boolean {
  const r = db.prepare(`${CRASH_RECORD_SELECT} WHERE id = ? AND oom_killed = 0`).get(id) as Parameters<typeof toRow>[0] | undefined;
  if (!r) return false;
  const row = toRow(r);
  const reason = deathReason({ ...row, oomKilled: true, logWindow: null });
  return (
    db.prepare('UPDATE keeper_crash_records SET oom_killed = 1, reason = ? WHERE id = ? AND oom_killed = 0').run(reason, id).changes === 1
  );
}

/** Each service's last recorded death: its reason and time, for `keeper status`. */
export function lastDeaths(db: StateDb): Map<string, { reason: string; diedAtMs: number | null; recordedAt: number }> {
  const rows = db
    .prepare(
      `SELECT service_id AS serviceId, reason, died_at_ms AS diedAtMs, recorded_at AS recordedAt FROM keeper_crash_records
                           WHERE id IN (SELECT MAX(id) FROM keeper_crash_records GROUP BY service_id)`,
    )
    .all() as { serviceId: string; reason: string; diedAtMs: number | null; recordedAt: number }[];
  return new Map(rows.map((r) => [r.serviceId, r]));
}

/** Every record as GC's retention sees it (id, service, recorded_at), without its facts or log. */
export function listCrashRecordAges(db: StateDb): RetainedRow[] {
  const rows = db.prepare('SELECT id, service_id AS serviceId, recorded_at AS recordedAt FROM keeper_crash_records').all() as {
    id: number;
    serviceId: string;
    recordedAt: number;
  }[];
  return rows.map((r) => ({ id: String(r.id), serviceId: r.serviceId, createdAt: Number(r.recordedAt) }));
}

/** Deleting an already deleted record is success: the GC activity may be retried. */
export function deleteCrashRecord(db: StateDb, id: string): void {
  db.prepare('DELETE FROM keeper_crash_records WHERE id = ?').run(Number(id));
}

/**
 * Log tails are a tenant's output, possibly with secrets in it: they are kept only in a state DB that no one
 * but its owner can read. keeper creates its DB 0600; one that ah or an operator made readable to others gets
 * the facts without the lines, and a note that says why.
 */
export function logTailsRefusedBecause(db: StateDb): string | undefined {
  try {
    const mode = fs.statSync(db.name).mode & 0o777;
    return mode & 0o077 ? `not kept: the state DB ${db.name} is readable by others (mode ${mode.toString(8)}; chmod 600 it)` : undefined;
  } catch (err) {
    return `not kept: the state DB's mode cannot be read (${(err as Error).message})`;
  }
}
