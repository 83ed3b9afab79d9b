/** keeper_request_failures: the worker's run requests Temporal has not taken, per host and loop (see keeper_2803). */
import type { StateDb } from './open';

export interface RequestFailure {
  loop: string;
  why: string;
  error: string;
  /** Temporal refused it for good; otherwise it did not take it yet. */
  refused: boolean;
  /** Unix seconds of the first failed attempt. */
  failingSince: number;
  attempts: number;
}

export function recordRequestFailure(db: StateDb, hostId: string, f: RequestFailure, nowSec: number): void {
  db.prepare(
    `INSERT INTO keeper_request_failures (host_id, loop, why, error, refused, failing_since, attempts, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT(host_id, loop) DO UPDATE SET why = excluded.why, error = excluded.error, refused = excluded.refused,
       failing_since = excluded.failing_since, attempts = excluded.attempts, updated_at = excluded.updated_at`,
  ).run(hostId, f.loop, f.why, f.error, f.refused ? 1 : 0, f.failingSince, f.attempts, nowSec);
}

/** The loop's request was taken (or dropped at a stop): no failure to show. `loop` undefined: every loop of the host. */
export function clearRequestFailure(db: StateDb, hostId: string, loop?: string): void {
  if (loop === undefined) db.prepare('DELETE FROM keeper_request_failures WHERE host_id = ?').run(hostId);
  else db.prepare('DELETE FROM keeper_request_failures WHERE host_id = ? AND loop = ?').run(hostId, loop);
}

export function readRequestFailures(db: StateDb, hostId: string): RequestFailure[] {
  const rows = db
    .prepare(
      `SELECT loop, why, error, refused, failing_since AS failingSince, attempts
         FROM keeper_request_failures WHERE host_id = ? ORDER BY loop`,
    )
    .all(hostId) as (Omit<RequestFailure, 'refused'> & { refused: number })[];
  return rows.map((r) => ({ ...r, refused: r.refused === 1 }));
}
