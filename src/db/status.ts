/** Read-only queries behind `keeper status`: what an operator wants to see at a glance. */
import { IS_CURRENT_OPENING } from './circuit-openings';
import type { StateDb } from './open';

export interface ServiceStatusRow {
  id: string;
  tenantId: string;
  name: string;
  status: string;
  crashesInWindow: number;
  circuitOpen: boolean;
  circuitRetryAt: number | null;
  /** The open circuit's opening (keeper_circuit_openings), or null: closed, or opened by ah and not numbered yet. */
  circuitOpening: number | null;
  /** circuit_open_count: the circuit's escalation level, which picks its next backoff and decays. */
  circuitOpenCount: number;
  lastError: string;
}

/** Every service, with its crash count only while its window is still open at `now` (unix seconds). */
export function serviceStatuses(db: StateDb, now: number, windowSeconds: number): ServiceStatusRow[] {
  const rows = db
    .prepare(
      `SELECT s.id, s.tenant_id, s.name, s.status, s.crash_count, s.crash_window_start, s.circuit_open, s.circuit_retry_at,
              s.circuit_open_count, s.last_error, o.opening
         FROM services s LEFT JOIN keeper_circuit_openings o ON ${IS_CURRENT_OPENING('s', 'o')}
        ORDER BY s.tenant_id, s.name, s.id`,
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
    opening: number | null;
  }[];
  return rows.map((r) => ({
    id: r.id,
    tenantId: r.tenant_id,
    name: r.name,
    status: r.status,
    crashesInWindow: r.crash_window_start !== null && now - r.crash_window_start < windowSeconds ? r.crash_count : 0,
    circuitOpen: r.circuit_open === 1,
    circuitRetryAt: r.circuit_retry_at,
    circuitOpening: r.opening,
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
