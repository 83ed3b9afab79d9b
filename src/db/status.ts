/** Read-only queries behind `keeper status`: what an operator wants to see at a glance. */
import type { StateDb } from './open';

export interface ServiceStatusRow {
  id: string;
  tenantId: string;
  name: string;
  status: string;
  crashesInWindow: number;
  circuitOpen: boolean;
  circuitRetryAt: number | null;
  circuitOpenCount: number;
  lastError: string;
}

/** Every service, with its crash count only while its window is still open at `now` (unix seconds). */
export function serviceStatuses(db: StateDb, now: number, windowSeconds: number): ServiceStatusRow[] {
  const rows = db
    .prepare(
      `SELECT id, tenant_id, name, status, crash_count, crash_window_start, circuit_open, circuit_retry_at,
              circuit_open_count, last_error
         FROM services ORDER BY tenant_id, name, id`,
    )
    .all() as {
    id: string;
    tenant_id: string;
    name: string;
    status: string;
    crash_count: number;
    crash_window_start: number | null;
    circuit_open: number;
    circuit_retry_at: number | null;
    circuit_open_count: number;
    last_error: string;
  }[];
  return rows.map((r) => ({
    id: r.id,
    tenantId: r.tenant_id,
    name: r.name,
    status: r.status,
    crashesInWindow: r.crash_window_start !== null && now - r.crash_window_start < windowSeconds ? r.crash_count : 0,
    circuitOpen: r.circuit_open === 1,
    circuitRetryAt: r.circuit_retry_at,
    circuitOpenCount: r.circuit_open_count,
    lastError: r.last_error,
  }));
}

/** Row counts by status for a table that has one (databases, environments). */
export function countsByStatus(db: StateDb, table: 'databases' | 'environments'): Record<string, number> {
  const rows = db.prepare(`SELECT status, COUNT(*) AS n FROM ${table} GROUP BY status ORDER BY status`).all() as {
    status: string;
    n: number;
  }[];
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}
