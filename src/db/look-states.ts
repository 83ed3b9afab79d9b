/**
 * keeper_look_states: how each of the worker's local looks last went, per host (see keeper_2802), for keeper status.
 * Its column asked_at is when a look last requested a run (the table is from before the word request).
 */
import type { StateDb } from './open';

export interface LookState {
  loop: string;
  /** Unix seconds of the last look that worked; null before the first. */
  lookedAt: number | null;
  found: number;
  /** Unix seconds of the last look that requested a run; null if none has. */
  requestedAt: number | null;
  error: string;
  failingSince: number | null;
}

/** What one look did: found `found` things (and requested a run, or not), or failed with `error`. */
export type LookReport = { found: number; requested: boolean; error?: undefined } | { error: string };

export function recordLookState(db: StateDb, hostId: string, loop: string, report: LookReport, nowSec: number): void {
  if (report.error !== undefined) {
    db.prepare(
      `INSERT INTO keeper_look_states (host_id, loop, error, failing_since) VALUES (?, ?, ?, ?)
       ON CONFLICT(host_id, loop) DO UPDATE SET error = excluded.error,
         failing_since = COALESCE(keeper_look_states.failing_since, excluded.failing_since)`,
    ).run(hostId, loop, report.error, nowSec);
    return;
  }
  db.prepare(
    `INSERT INTO keeper_look_states (host_id, loop, looked_at, found, asked_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT(host_id, loop) DO UPDATE SET looked_at = excluded.looked_at, found = excluded.found,
       asked_at = COALESCE(excluded.asked_at, keeper_look_states.asked_at), error = '', failing_since = NULL`,
  ).run(hostId, loop, nowSec, report.found, report.requested ? nowSec : null);
}

export function readLookStates(db: StateDb, hostId: string): LookState[] {
  return db
    .prepare(
      `SELECT loop, looked_at AS lookedAt, found, asked_at AS requestedAt, error, failing_since AS failingSince
         FROM keeper_look_states WHERE host_id = ? ORDER BY loop`,
    )
    .all(hostId) as LookState[];
}
