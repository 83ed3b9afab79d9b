/**
 * keeper_circuit_openings (see keeper_2901): each service's latest circuit opening, by a number of its own, 1, 2,
 * 3 ..., that never goes back. ah's circuit_open_count is the escalation level (it picks the backoff and decays to 0);
 * the opening number is keeper's, and an opening's alerts, notify workflows, hold and recovery are by it.
 *
 * The services row says whether the circuit is open; this row says which opening that is. The open row is the
 * recorded opening while its escalation and retry time are the ones recorded (keeper never changes them while the
 * circuit is open). The escalation's column is `generation`, its name in the builds before openings were numbered,
 * which still write it (compatibility: a newer CLI may migrate the DB under an older worker). An open row that differs (ah opened it, or closed the recorded one and opened another, or it
 * was open before openings were numbered) is an opening keeper has not numbered yet: the tick's hand-over, or the
 * circuit workflow's hold, numbers it (`takeOverOpening`).
 *
 * A service's first opening is numbered above the floor (keeper_circuit_opening_floor): the highest number GC pruned
 * with the rows of a service that was gone. So an id that ah reuses after its rows were pruned goes on above every
 * number the old service had, and no opening's key is ever sent twice for the same id on this state DB.
 */
import type { CircuitRef } from '../contracts/reconcile';
import type { StateDb } from './open';

/**
 * An open circuit on a row the tick can trust: a known status and integer counts and retry time. Recovery rewrites
 * the row, so a row of nonsense is only reported (by the observe step), never handed to a circuit workflow. `s` names
 * the services row in the query.
 */
export const trustedOpenCircuit = (s = 'services') => `${s}.circuit_open = 1
    AND ${s}.status IN ('created', 'deploying', 'running', 'stopped', 'crashed', 'failed', 'restarting')
    AND typeof(${s}.crash_count) = 'integer' AND ${s}.crash_count >= 0
    AND typeof(${s}.circuit_open_count) = 'integer' AND ${s}.circuit_open_count >= 0
    AND typeof(${s}.circuit_retry_at) = 'integer'`;

/** The opening row `o` is the open circuit of the services row `s` (see the header). */
export const IS_CURRENT_OPENING = (s: string, o: string) =>
  `${o}.service_id = ${s}.id AND ${s}.circuit_open = 1 AND ${o}.opening > 0 AND ${o}.generation = ${s}.circuit_open_count
   AND ${o}.retry_at IS ${s}.circuit_retry_at`;

/** An open circuit as a CircuitRef, with its opening's number when keeper has numbered it (aliases `s`, `o`). */
export const OPEN_CIRCUIT_REF = `SELECT s.id AS serviceId, o.opening AS opening, s.circuit_open_count AS escalation,
       s.circuit_retry_at AS retryAt
  FROM services s LEFT JOIN keeper_circuit_openings o ON ${IS_CURRENT_OPENING('s', 'o')}`;

export type CircuitRefRow = Omit<CircuitRef, 'opening'> & { opening: number | null };

/** Rows of OPEN_CIRCUIT_REF as CircuitRefs: an opening not numbered yet has no number. */
export function toCircuitRefs(rows: CircuitRefRow[]): CircuitRef[] {
  return rows.map(({ opening, ...r }) => (opening === null ? r : { ...r, opening }));
}

/** The number the service's next opening gets: one more than its last, or than the floor when it has none numbered. */
function nextOpening(db: StateDb, serviceId: string): number {
  const last = db
    .prepare(
      `SELECT COALESCE(NULLIF((SELECT opening FROM keeper_circuit_openings WHERE service_id = ?), 0),
                       (SELECT opening FROM keeper_circuit_opening_floor), 0)`,
    )
    .pluck()
    .get(serviceId) as number;
  return last + 1;
}

/** keeper opens the circuit (in recordCrash's transaction): the next number, escalation and retry time, now. */
export function recordOpening(db: StateDb, o: { serviceId: string; escalation: number; retryAt: number }, now: number): number {
  const opening = nextOpening(db, o.serviceId);
  db.prepare(
    `INSERT INTO keeper_circuit_openings (service_id, opening, generation, retry_at, opened_at, taken_over_at)
       VALUES (?, ?, ?, ?, ?, NULL)
       ON CONFLICT (service_id) DO UPDATE SET opening = excluded.opening, generation = excluded.generation,
          retry_at = excluded.retry_at, opened_at = excluded.opened_at, taken_over_at = NULL`,
  ).run(o.serviceId, opening, o.escalation, o.retryAt, now);
  return opening;
}

/** When keeper last opened the service's circuit itself (escalation decays from it); null if it never did. */
export function lastOpenedAt(db: StateDb, serviceId: string): number | null {
  const v = db.prepare('SELECT opened_at FROM keeper_circuit_openings WHERE service_id = ?').pluck().get(serviceId) as
    number | null | undefined;
  return v ?? null;
}

/** The number of the service's open circuit, or undefined: closed, or open on an opening not numbered yet. */
export function currentOpening(db: StateDb, serviceId: string): number | undefined {
  const v = db
    .prepare(`SELECT o.opening FROM services s JOIN keeper_circuit_openings o ON ${IS_CURRENT_OPENING('s', 'o')} WHERE s.id = ?`)
    .pluck()
    .get(serviceId) as number | undefined;
  return v;
}

/**
 * The number of the service's open circuit, numbering it first when keeper has not (taken over: ah opened it, or it
 * was open before openings were numbered). Undefined when the circuit is not open, or its escalation is not a count.
 * One transaction: of any number of callers at once, one numbers it and all get that number. (The tick hands over
 * only rows it can trust; an operator's reset may take over any open one, as it may close any.)
 */
export function takeOverOpening(db: StateDb, serviceId: string, now: number): number | undefined {
  return db
    .transaction((): number | undefined => {
      const current = currentOpening(db, serviceId);
      if (current !== undefined) return current;
      const open = db
        .prepare(
          `SELECT circuit_open_count AS escalation, circuit_retry_at AS retryAt FROM services WHERE id = ? AND circuit_open = 1 AND typeof(circuit_open_count) = 'integer' AND circuit_open_count >= 0`,
        )
        .get(serviceId) as { escalation: number; retryAt: number } | undefined;
      if (!open) return undefined;
      const opening = nextOpening(db, serviceId);
      db.prepare(
        `INSERT INTO keeper_circuit_openings (service_id, opening, generation, retry_at, opened_at, taken_over_at)
           VALUES (?, ?, ?, ?, NULL, ?)
           ON CONFLICT (service_id) DO UPDATE SET opening = excluded.opening, generation = excluded.generation,
              retry_at = excluded.retry_at, taken_over_at = excluded.taken_over_at`,
      ).run(serviceId, opening, open.escalation, open.retryAt, now);
      return opening;
    })
    .immediate();
}

// ---- rows of services that are gone (the orphanRecords GC class) ----

/** Opening rows whose service row is gone: their number, and since when (keeper opened or took it over). */
export function openingsOfGoneServices(db: StateDb): { serviceId: string; opening: number; since: number | null }[] {
  return db
    .prepare(
      `SELECT service_id AS serviceId, opening, COALESCE(taken_over_at, opened_at) AS since FROM keeper_circuit_openings o
        WHERE NOT EXISTS (SELECT 1 FROM services s WHERE s.id = o.service_id) ORDER BY service_id`,
    )
    .all() as { serviceId: string; opening: number; since: number | null }[];
}

/**
 * Deletes the opening row of a service that is still gone, and raises the floor to its number in the same
 * transaction, so that the id, if ah ever reuses it, numbers its openings above it. False when there was none to
 * delete (already pruned, or the service is back).
 */
export function deleteOpeningOfGoneService(db: StateDb, serviceId: string): boolean {
  return db
    .transaction((): boolean => {
      const row = db
        .prepare(
          `SELECT opening FROM keeper_circuit_openings o
            WHERE service_id = ? AND NOT EXISTS (SELECT 1 FROM services s WHERE s.id = o.service_id)`,
        )
        .pluck()
        .get(serviceId) as number | undefined;
      if (row === undefined) return false;
      db.prepare(
        `INSERT INTO keeper_circuit_opening_floor (only_row, opening) VALUES (1, ?)
           ON CONFLICT (only_row) DO UPDATE SET opening = MAX(opening, excluded.opening)`,
      ).run(row);
      db.prepare('DELETE FROM keeper_circuit_openings WHERE service_id = ?').run(serviceId);
      return true;
    })
    .immediate();
}
