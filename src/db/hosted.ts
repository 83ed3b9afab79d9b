/** Database and environment rows, as the reconciler keeps them (ah's rules, with W-2, W-15 and W-16 of docs/ah-differences.md fixed). */
import type { StateDb } from './open';

export interface HostedRow {
  id: string;
  tenantId: string | null;
  status: string;
  containerId: string | null;
  leaseExpiresAt: number | null;
}

export function readDatabases(db: StateDb): HostedRow[] {
  return db
    .prepare(
      `SELECT id, tenant_id AS tenantId, status, container_id AS containerId, NULL AS leaseExpiresAt
              FROM databases WHERE status IN ('ready', 'unavailable') ORDER BY id`,
    )
    .all() as HostedRow[];
}

/** ready ↔ unavailable, only from the status the tick observed. */
export function setDatabaseStatus(db: StateDb, id: string, from: string, to: string, now: number): boolean {
  return db.prepare('UPDATE databases SET status = ?, updated_at = ? WHERE id = ? AND status = ?').run(to, now, id, from).changes === 1;
}

export function readEnvironments(db: StateDb): HostedRow[] {
  return db
    .prepare(
      `SELECT id, tenant_id AS tenantId, status, container_id AS containerId, lease_expires_at AS leaseExpiresAt
              FROM environments WHERE status IN ('running', 'stopped') ORDER BY id`,
    )
    .all() as HostedRow[];
}

/** A running environment whose container died, vanished or whose lease expired becomes `stopped`. */
export function stopEnvironment(db: StateDb, id: string, now: number): boolean {
  return (
    db.prepare(`UPDATE environments SET status = 'stopped', updated_at = ? WHERE id = ? AND status = 'running'`).run(now, id).changes === 1
  );
}

/** Each condition once: the tick's write and the worker's look (which only counts) share it. */
const LEASE_EXPIRED = `status = 'running' AND lease_expires_at IS NOT NULL AND lease_expires_at < ?`;
const CREATE_STALE = `status = 'creating' AND updated_at < ?`;

/** Running environments whose lease has expired: their DB status is set first; the container stop follows. */
export function expireLeases(db: StateDb, now: number): number {
  return db.prepare(`UPDATE environments SET status = 'stopped', updated_at = ? WHERE ${LEASE_EXPIRED}`).run(now, now).changes;
}

export function failStaleEnvironmentCreates(db: StateDb, now: number, afterSec: number): number {
  return db.prepare(`UPDATE environments SET status = 'failed', updated_at = ? WHERE ${CREATE_STALE}`).run(now, now - afterSec).changes;
}

/** The environments a tick would stop for their lease, or fail for a stale create, now: ids, read only. */
export function environmentsDue(db: StateDb, now: number, staleCreateAfterSec: number): { leases: string[]; creates: string[] } {
  const ids = (where: string, at: number) =>
    db.prepare(`SELECT id FROM environments WHERE ${where} ORDER BY id`).pluck().all(at) as string[];
  return { leases: ids(LEASE_EXPIRED, now), creates: ids(CREATE_STALE, now - staleCreateAfterSec) };
}

/** Whether a problem has been reported (and logged) already: read only. */
export function problemReported(db: StateDb, subject: string, problem: string): boolean {
  return db.prepare('SELECT 1 FROM keeper_reported_problems WHERE subject = ? AND problem = ?').get(subject, problem) !== undefined;
}

/** Records a problem once; true the first time, so that the caller logs it once, not every tick. */
export function reportProblemOnce(db: StateDb, subject: string, problem: string, now: number): boolean {
  return (
    db
      .prepare('INSERT INTO keeper_reported_problems (subject, problem, first_seen) VALUES (?, ?, ?) ON CONFLICT DO NOTHING')
      .run(subject, problem, now).changes === 1
  );
}

/** A reported problem as the table keeps it: what it was about (`service:<id>`, `container:<id12>` ...) and since when. */
export interface ReportedProblem {
  subject: string;
  problem: string;
  firstSeen: number; // unix seconds
}

/** Every reported problem (the orphanRecords GC class judges whether its subject is gone). */
export function reportedProblems(db: StateDb): ReportedProblem[] {
  return db
    .prepare('SELECT subject, problem, first_seen AS firstSeen FROM keeper_reported_problems ORDER BY subject, problem')
    .all() as ReportedProblem[];
}

/** The rows a problem's subject can name, by the subject's kind: `service:<id>` is a services row, and so on. */
export const SUBJECT_TABLES = { service: 'services', database: 'databases', environment: 'environments' } as const;
export type RowSubject = keyof typeof SUBJECT_TABLES;

/** The ids of each table a problem's subject can name. */
export function subjectRowIds(db: StateDb): Record<RowSubject, Set<string>> {
  const ids = (table: string) => new Set((db.prepare(`SELECT id FROM ${table}`).pluck().all() as unknown[]).map(String));
  return { service: ids(SUBJECT_TABLES.service), database: ids(SUBJECT_TABLES.database), environment: ids(SUBJECT_TABLES.environment) };
}

/**
 * Deletes a reported problem as the sweep saw it (the same first_seen: not one reported again since), and, when its
 * subject names a row (`gone`), only while that row is still gone. False when nothing was deleted.
 */
export function deleteReportedProblem(db: StateDb, p: ReportedProblem, gone?: { kind: RowSubject; id: string }): boolean {
  const stillGone = gone ? `AND NOT EXISTS (SELECT 1 FROM ${SUBJECT_TABLES[gone.kind]} WHERE id = ?)` : '';
  return (
    db
      .prepare(`DELETE FROM keeper_reported_problems WHERE subject = ? AND problem = ? AND first_seen = ? ${stillGone}`)
      .run(p.subject, p.problem, p.firstSeen, ...(gone ? [gone.id] : [])).changes === 1
  );
}
