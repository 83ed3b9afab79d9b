/**
 * keeper_circuit_holds (see keeper_2801 and keeper_2901): which opening of each circuit its workflow has taken hold
 * of. An open circuit whose opening no workflow holds has no timer yet, and needs one, whoever opened it and however
 * long ago.
 */
import type { CircuitRef } from '../contracts/reconcile';
import { OPEN_CIRCUIT_REF, takeOverOpening, toCircuitRefs, trustedOpenCircuit, type CircuitRefRow } from './circuit-openings';
import type { StateDb } from './open';

/**
 * The circuit's workflow holds this opening: its timer runs. `generation` is the opening's escalation, for the builds
 * from before openings were numbered, which read holds by it (compatibility).
 */
function recordCircuitHold(db: StateDb, serviceId: string, opening: number, now: number): void {
  db.prepare(
    `INSERT INTO keeper_circuit_holds (service_id, opening, generation, held_at)
       SELECT ?, o.opening, o.generation, ? FROM keeper_circuit_openings o WHERE o.service_id = ? AND o.opening = ?
       ON CONFLICT(service_id) DO UPDATE SET opening = excluded.opening, generation = excluded.generation, held_at = excluded.held_at
       WHERE keeper_circuit_holds.opening IS NOT excluded.opening`,
  ).run(serviceId, now, serviceId, opening);
}

/**
 * The circuit workflow takes hold of the open circuit's opening, numbering it first when keeper has not (taken
 * over), in one transaction. Its number, or undefined when the circuit is not open (on a row the tick can trust).
 */
export function holdCurrentOpening(db: StateDb, serviceId: string, now: number): number | undefined {
  return db
    .transaction((): number | undefined => {
      const opening = takeOverOpening(db, serviceId, now);
      if (opening !== undefined) recordCircuitHold(db, serviceId, opening, now);
      return opening;
    })
    .immediate();
}

/**
 * holdCurrentOpening, only if the open circuit still has this escalation and retry time (the opening a run from
 * before openings were numbered began holding). Undefined otherwise.
 */
export function holdCurrentOpeningIf(
  db: StateDb,
  r: { serviceId: string; escalation: number; retryAt: number },
  now: number,
): number | undefined {
  return db
    .transaction((): number | undefined => {
      const same = db
        .prepare('SELECT 1 FROM services WHERE id = ? AND circuit_open = 1 AND circuit_open_count = ? AND circuit_retry_at = ?')
        .get(r.serviceId, r.escalation, r.retryAt);
      return same ? holdCurrentOpening(db, r.serviceId, now) : undefined;
    })
    .immediate();
}

/** The opening the service's circuit workflow last took hold of, or undefined. */
export function heldOpening(db: StateDb, serviceId: string): number | undefined {
  const v = db.prepare('SELECT opening FROM keeper_circuit_holds WHERE service_id = ?').pluck().get(serviceId) as number | null | undefined;
  return v ?? undefined; // NULL: an older build's hold, of no numbered opening
}

/**
 * Open circuits whose current opening no workflow holds: opened by a tick whose worker died before it started the
 * workflow, during a server outage, by ah, or anew while the workflow of an older opening still ran. Rows the tick
 * cannot trust (an unknown status, non-integer counts or retry time) are left to the observe step, which reports
 * them: recovery would rewrite them. Read only: the look shares it; the tick's hand-over numbers what it returns.
 */
export function unheldCircuits(db: StateDb): CircuitRef[] {
  const rows = db
    .prepare(
      `${OPEN_CIRCUIT_REF}
        WHERE ${trustedOpenCircuit('s')}
          AND NOT EXISTS (SELECT 1 FROM keeper_circuit_holds h WHERE h.service_id = s.id AND h.opening = o.opening)
        ORDER BY s.id`,
    )
    .all() as CircuitRefRow[];
  return toCircuitRefs(rows);
}

/**
 * Forgets the holds taken at or after `sinceSec`: a one-shot command's own in-memory server takes its circuit
 * workflows with it when it exits, so the circuits they held need a workflow again (the host's worker starts one).
 */
export function releaseCircuitHoldsSince(db: StateDb, sinceSec: number): number {
  return db.prepare('DELETE FROM keeper_circuit_holds WHERE held_at >= ?').run(sinceSec).changes;
}

// ---- rows of services that are gone (the orphanRecords GC class) ----

/** Holds whose service row is gone. */
export function holdsOfGoneServices(db: StateDb): { serviceId: string; opening: number; heldAt: number }[] {
  return db
    .prepare(
      `SELECT service_id AS serviceId, opening, held_at AS heldAt FROM keeper_circuit_holds h
        WHERE NOT EXISTS (SELECT 1 FROM services s WHERE s.id = h.service_id) ORDER BY service_id`,
    )
    .all() as { serviceId: string; opening: number; heldAt: number }[];
}

/** Deletes the hold of a service that is still gone; false when there was none (already pruned, or it is back). */
export function deleteHoldOfGoneService(db: StateDb, serviceId: string): boolean {
  return (
    db
      .prepare(
        `DELETE FROM keeper_circuit_holds
          WHERE service_id = ? AND NOT EXISTS (SELECT 1 FROM services s WHERE s.id = keeper_circuit_holds.service_id)`,
      )
      .run(serviceId).changes === 1
  );
}
