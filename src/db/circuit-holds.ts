/**
 * keeper_circuit_holds (see keeper_2801): which opening of each circuit its workflow has taken hold of. An open
 * circuit whose opening no workflow holds has no timer yet, and needs one, whoever opened it and however long ago.
 */
import type { CircuitRef } from '../contracts/reconcile';
import type { StateDb } from './open';
import { TRUSTED_OPEN_CIRCUIT } from './services';

/** The circuit's workflow holds this opening (generation): its timer runs. */
export function recordCircuitHold(db: StateDb, serviceId: string, generation: number, now: number): void {
  db.prepare(
    `INSERT INTO keeper_circuit_holds (service_id, generation, held_at) VALUES (?, ?, ?)
       ON CONFLICT(service_id) DO UPDATE SET generation = excluded.generation, held_at = excluded.held_at
       WHERE excluded.generation <> keeper_circuit_holds.generation`,
  ).run(serviceId, generation, now);
}

/**
 * Open circuits whose current opening no workflow holds: opened by a tick whose worker died before it started the
 * workflow, during a server outage, or by ah. Rows the tick cannot trust (an unknown status, non-integer counts or
 * retry time) are left to the observe step, which reports them: recovery would rewrite them.
 */
export function unheldCircuits(db: StateDb): CircuitRef[] {
  return db
    .prepare(
      `SELECT id AS serviceId, circuit_open_count AS generation, circuit_retry_at AS retryAt FROM services
        WHERE ${TRUSTED_OPEN_CIRCUIT}
          AND NOT EXISTS (SELECT 1 FROM keeper_circuit_holds h WHERE h.service_id = services.id AND h.generation = services.circuit_open_count)
        ORDER BY id`,
    )
    .all() as CircuitRef[];
}

/**
 * Forgets the holds taken at or after `sinceSec`: a one-shot command's own in-memory server takes its circuit
 * workflows with it when it exits, so the circuits they held need a workflow again (the host's worker starts one).
 */
export function releaseCircuitHoldsSince(db: StateDb, sinceSec: number): number {
  return db.prepare('DELETE FROM keeper_circuit_holds WHERE held_at >= ?').run(sinceSec).changes;
}
