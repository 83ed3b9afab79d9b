/** keeper_event_watcher: the Docker event watcher's state and resume cursor, per host (see keeper_401). */
import type { StateDb } from './open';

export type WatcherState = 'following' | 'silent' | 'reconnecting' | 'unavailable' | 'stopped';

export interface EventWatcherState {
  hostId: string;
  state: WatcherState;
  lastError: string;
  /** Engine time (ns) of the last event handled; resumes from here. null before the first. */
  lastEventNs: bigint | null;
  stateSince: number; // unix seconds
  updatedAt: number;
}

interface Row {
  host_id: string;
  state: WatcherState;
  last_error: string;
  last_event_ns: string | null;
  state_since: number;
  updated_at: number;
}

export function readEventWatcherState(db: StateDb, hostId: string): EventWatcherState | undefined {
  const r = db.prepare('SELECT * FROM keeper_event_watcher WHERE host_id = ?').get(hostId) as Row | undefined;
  if (!r) return undefined;
  return {
    hostId: r.host_id,
    state: r.state,
    lastError: r.last_error,
    lastEventNs: r.last_event_ns === null ? null : BigInt(r.last_event_ns),
    stateSince: r.state_since,
    updatedAt: r.updated_at,
  };
}

/** Records a state change; state_since moves only when the state itself changes. The cursor is kept. */
export function writeWatcherState(db: StateDb, hostId: string, state: WatcherState, lastError: string, now: number): void {
  db.prepare(
    `INSERT INTO keeper_event_watcher (host_id, state, last_error, last_event_ns, state_since, updated_at)
              VALUES (?, ?, ?, NULL, ?, ?)
              ON CONFLICT(host_id) DO UPDATE SET
                state_since = CASE WHEN state = excluded.state THEN state_since ELSE excluded.state_since END,
                state = excluded.state, last_error = excluded.last_error, updated_at = excluded.updated_at`,
  ).run(hostId, state, lastError, now, now);
}

/** Moves the resume cursor forward, never back (a replayed older event cannot rewind it). */
export function advanceEventCursor(db: StateDb, hostId: string, eventNs: bigint, now: number): void {
  const text = eventNs.toString();
  // Decimal strings of equal length compare like the numbers; ns timestamps have 19 digits until 2286.
  db.prepare(
    `UPDATE keeper_event_watcher SET last_event_ns = ?, updated_at = ?
              WHERE host_id = ? AND (last_event_ns IS NULL OR length(last_event_ns) < length(?)
                OR (length(last_event_ns) = length(?) AND last_event_ns < ?))`,
  ).run(text, now, hostId, text, text, text);
}
