/**
 * Who counts crashes on this DB. keeper records every death it counts in keeper_crash_records, in the transaction
 * that raises crash_count, tagged with the crash window it was counted in. So in a window that opened after keeper
 * arrived on the DB, crash_count can only exceed keeper's records of that window if another writer counted too:
 * ah's own reconciler, still running beside keeper.
 */
import type { StateDb } from './open';

export interface UncountedCrashes {
  serviceId: string;
  crashCount: number;
  /** Deaths keeper recorded in the service's current window. */
  keeperCounted: number;
  windowStart: number; // unix seconds
}

/**
 * Services whose current crash window opened at or after `sinceSec` and holds more deaths than keeper recorded in
 * it. With a per-service retention of crash records (`keptPerService` > 0), a count above it cannot be told from
 * records GC removed, so such a service is not judged.
 */
export function crashesCountedByOthers(db: StateDb, sinceSec: number, keptPerService: number): UncountedCrashes[] {
  return db
    .prepare(
      `SELECT s.id AS serviceId, s.crash_count AS crashCount, s.crash_window_start AS windowStart,
        (SELECT COUNT(*) FROM keeper_crash_records r WHERE r.service_id = s.id AND r.window_start = s.crash_window_start) AS keeperCounted
      FROM services s
      WHERE typeof(s.crash_count) = 'integer' AND typeof(s.crash_window_start) = 'integer' AND s.crash_window_start >= ?
        AND (? = 0 OR s.crash_count <= ?)
        AND s.crash_count > (SELECT COUNT(*) FROM keeper_crash_records r WHERE r.service_id = s.id AND r.window_start = s.crash_window_start)
      ORDER BY s.id`,
    )
    .all(sinceSec, keptPerService, keptPerService) as UncountedCrashes[];
}
