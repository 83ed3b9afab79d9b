/**
 * Environment rows, as ah's environment create writes them, plus the warm claim. The claim is one atomic
 * UPDATE of warm_pool; it runs in the same immediate transaction as the write that makes the environment row
 * reference the claimed container and volume, so that from the moment a row is taken some row always holds
 * its Docker resources (GC sees them as owned) and no other claim can take it.
 */
import type { StateDb } from './open';

export interface EnvironmentRow {
  id: string;
  tenantId: string;
  name: string;
  templateId: string;
  status: string;
  containerId: string;
  volumeName: string;
  leaseExpiresAt: number | null;
  leaseDurationSeconds: number;
}

export class EnvironmentExistsError extends Error {
  override name = 'EnvironmentExistsError';
}

export function tenantExists(db: StateDb, tenantId: string): boolean {
  return !!db.prepare('SELECT 1 FROM tenants WHERE id = ?').get(tenantId);
}

/** Inserts the row in status `creating`; a second environment with the same (tenant, name) is refused. */
export function insertCreatingEnvironment(
  db: StateDb,
  e: { id: string; tenantId: string; name: string; templateId: string; leaseSeconds: number; now: number },
): void {
  try {
    db.prepare(
      `INSERT INTO environments (id, tenant_id, name, template_id, status, container_id, volume_name, lease_duration_seconds, created_at, updated_at)
       VALUES (?, ?, ?, ?, 'creating', '', '', ?, ?, ?)`,
    ).run(e.id, e.tenantId, e.name, e.templateId, e.leaseSeconds, e.now, e.now);
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
      throw new EnvironmentExistsError(`environment ${e.name} already exists for tenant ${e.tenantId}`);
    }
    throw err;
  }
}

/** Those of `containerIds` that an environment row holds: claimed pool containers, never ready ones. */
export function containersHeldByEnvironments(db: StateDb, containerIds: string[]): string[] {
  if (containerIds.length === 0) return [];
  return db
    .prepare(`SELECT DISTINCT container_id FROM environments WHERE container_id IN (SELECT value FROM json_each(?))`)
    .pluck()
    .all(JSON.stringify(containerIds)) as string[];
}

export interface ClaimedEntry {
  id: string;
  containerId: string;
  volumeName: string;
}

/**
 * Takes the oldest ready pool row of `templateId` whose container is recorded under `runtime` for environment
 * `envId`: one atomic UPDATE … RETURNING, and in the same transaction the environment row takes over the
 * container and volume. Undefined when the pool has no such row: a container of another runtime, or one whose
 * runtime keeper has not recorded yet (keeper_container_runtimes), is never handed out. No lock outside
 * SQLite's own is held, and no Docker call happens inside.
 */
export function claimPoolEntry(db: StateDb, envId: string, templateId: string, runtime: string, now: number): ClaimedEntry | undefined {
  const claim = db.prepare(
    `UPDATE warm_pool SET status = 'claimed'
      WHERE id = (SELECT w.id FROM warm_pool w JOIN keeper_container_runtimes r ON r.container_id = w.container_id
                   WHERE w.template_id = ? AND w.status = 'ready' AND r.runtime = ? ORDER BY w.created_at, w.id LIMIT 1)
        AND status = 'ready'
      RETURNING id, container_id AS containerId, volume_name AS volumeName`,
  );
  const hold = db.prepare(`UPDATE environments SET container_id = ?, volume_name = ?, updated_at = ? WHERE id = ?`);
  return db
    .transaction(() => {
      const entry = claim.get(templateId, runtime) as ClaimedEntry | undefined;
      if (entry) hold.run(entry.containerId, entry.volumeName, now, envId);
      return entry;
    })
    .immediate();
}

/** Records where the environment's container and volume are while it is being created (cold path). */
export function setEnvironmentResources(db: StateDb, envId: string, containerId: string, volumeName: string, now: number): void {
  db.prepare(`UPDATE environments SET container_id = ?, volume_name = ?, updated_at = ? WHERE id = ?`).run(
    containerId,
    volumeName,
    now,
    envId,
  );
}

/** creating → running with its lease; the claimed pool row, if any, is removed in the same transaction. */
export function markEnvironmentRunning(
  db: StateDb,
  e: { id: string; containerId: string; volumeName: string; now: number; leaseSeconds: number; poolEntryId?: string },
): void {
  db.transaction(() => {
    db.prepare(
      `UPDATE environments SET status = 'running', container_id = ?, volume_name = ?, lease_expires_at = ?,
         last_activity_at = ?, updated_at = ? WHERE id = ?`,
    ).run(e.containerId, e.volumeName, e.now + e.leaseSeconds, e.now, e.now, e.id);
    if (e.poolEntryId) db.prepare(`DELETE FROM warm_pool WHERE id = ? AND status = 'claimed'`).run(e.poolEntryId);
  }).immediate();
}

/** A create that could not finish: its Docker resources are already gone, so the row references none. */
export function markEnvironmentFailed(db: StateDb, id: string, now: number): void {
  db.prepare(`UPDATE environments SET status = 'failed', container_id = '', volume_name = '', updated_at = ? WHERE id = ?`).run(now, id);
}

export function getEnvironment(db: StateDb, id: string): EnvironmentRow | undefined {
  return db
    .prepare(
      `SELECT id, tenant_id AS tenantId, name, template_id AS templateId, status, container_id AS containerId,
         volume_name AS volumeName, lease_expires_at AS leaseExpiresAt, lease_duration_seconds AS leaseDurationSeconds
         FROM environments WHERE id = ?`,
    )
    .get(id) as EnvironmentRow | undefined;
}

/**
 * After a failed warm move whose container and volume were removed: the pool row goes, and the environment
 * row no longer points at them, so the cold path starts from a clean row.
 */
export function releaseClaim(db: StateDb, envId: string, entryId: string, now: number): void {
  db.transaction(() => {
    db.prepare(`DELETE FROM warm_pool WHERE id = ? AND status = 'claimed'`).run(entryId);
    db.prepare(`UPDATE environments SET container_id = '', volume_name = '', updated_at = ? WHERE id = ?`).run(now, envId);
  }).immediate();
}
