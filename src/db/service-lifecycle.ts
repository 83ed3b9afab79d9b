/**
 * Rows behind `keeper service …`, the small lifecycle a standalone host needs so that the loops have services
 * to keep. The writes follow ah's services API, including its order: a stop is written before the
 * container stops, so the reconciler never mistakes it for a crash.
 */
import crypto from 'node:crypto';
import type { StateDb } from './open';

export interface ServiceRecord {
  id: string;
  tenantId: string;
  name: string;
  status: string;
  image: string | null;
  containerId: string | null;
  port: number;
  circuitOpen: boolean;
}

export function newServiceId(): string {
  return crypto.randomBytes(16).toString('hex');
}

/** A standalone host has no tenant rows; the first service of a tenant creates it (with ah's default quota). */
export function ensureTenant(db: StateDb, tenantId: string, now: number): boolean {
  const created =
    db
      .prepare(`INSERT OR IGNORE INTO tenants (id, name, email, status, created_at, updated_at) VALUES (?, ?, ?, 'active', ?, ?)`)
      .run(tenantId, tenantId, `${tenantId}@keeper.local`, now, now).changes === 1;
  db.prepare('INSERT OR IGNORE INTO tenant_quotas (tenant_id) VALUES (?)').run(tenantId);
  return created;
}

/** The service row, `deploying`, and its tenant (with ah's default quota) when the tenant is new: one transaction. */
export function insertDeployingService(
  db: StateDb,
  s: { id: string; tenantId: string; name: string; image: string; port: number },
  now: number,
): void {
  db.transaction(() => {
    ensureTenant(db, s.tenantId, now);
    db.prepare(
      `INSERT INTO services (id, tenant_id, name, status, image, source_type, container_id, port, created_at, updated_at)
       VALUES (?, ?, ?, 'deploying', ?, 'image', '', ?, ?, ?)`,
    ).run(s.id, s.tenantId, s.name, s.image, s.port, now, now);
  })();
}

export function readService(db: StateDb, id: string): ServiceRecord | undefined {
  const r = db.prepare(`SELECT id, tenant_id, name, status, image, container_id, port, circuit_open FROM services WHERE id = ?`).get(id) as
    | {
        id: string;
        tenant_id: string;
        name: string;
        status: string;
        image: string | null;
        container_id: string | null;
        port: number;
        circuit_open: number;
      }
    | undefined;
  return (
    r && {
      id: r.id,
      tenantId: r.tenant_id,
      name: r.name,
      status: r.status,
      image: r.image,
      containerId: r.container_id,
      port: r.port,
      circuitOpen: r.circuit_open === 1,
    }
  );
}

export function markDeployed(db: StateDb, id: string, containerId: string, now: number): void {
  db.prepare(`UPDATE services SET status = 'running', container_id = ?, last_error = '', updated_at = ? WHERE id = ?`).run(
    containerId,
    now,
    id,
  );
}

export function markDeployFailed(db: StateDb, id: string, error: string, now: number): void {
  db.prepare(`UPDATE services SET status = 'failed', last_error = ?, updated_at = ? WHERE id = ?`).run(error, now, id);
}

/** Sets the status an operator command asked for; refuses while the circuit is open. */
export function setOperatorStatus(db: StateDb, id: string, status: 'running' | 'stopped', now: number): boolean {
  return (
    db
      .prepare(`UPDATE services SET status = ?, updated_at = ? WHERE id = ? AND (circuit_open = 0 OR ? = 'stopped')`)
      .run(status, now, id, status).changes === 1
  );
}

export function deleteService(db: StateDb, id: string): void {
  db.prepare('DELETE FROM services WHERE id = ?').run(id);
}
