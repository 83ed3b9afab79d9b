/**
 * keeper_container_snapshots: keeper's snapshot of each service's container, what the reconciler last saw of it (see
 * keeper_3001; keeper_101's keeper_container_looks, kept equal to it for builds from before).
 */
import type { ContainerSnapshot } from '../contracts/reconcile';
import type { StateDb } from './open';

export interface StoredSnapshot extends ContainerSnapshot {
  /** Unix seconds: the container was in this state then. */
  seenAt: number;
}

export function readSnapshots(db: StateDb): Map<string, StoredSnapshot> {
  const rows = db
    .prepare('SELECT service_id, container_id, state, restart_count, health, seen_at FROM keeper_container_snapshots')
    .all() as {
    service_id: string;
    container_id: string;
    state: string;
    restart_count: number;
    health: string;
    seen_at: number;
  }[];
  return new Map(
    rows.map((r) => [
      r.service_id,
      { containerId: r.container_id, state: r.state, restartCount: r.restart_count, health: r.health, seenAt: r.seen_at },
    ]),
  );
}

/**
 * Compare-and-set: replaces the snapshot `expected` (null: no row yet) by `next`. Returns false when the row is
 * no longer what the caller saw, i.e. this transition was already applied (a retry) or raced.
 */
export function swapSnapshot(
  db: StateDb,
  serviceId: string,
  expected: ContainerSnapshot | null,
  next: ContainerSnapshot,
  now: number,
): boolean {
  if (expected === null) {
    return (
      db
        .prepare(
          `INSERT INTO keeper_container_snapshots (service_id, container_id, state, restart_count, health, seen_at)
                VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(service_id) DO NOTHING`,
        )
        .run(serviceId, next.containerId, next.state, next.restartCount, next.health, now).changes === 1
    );
  }
  return (
    db
      .prepare(
        `UPDATE keeper_container_snapshots SET container_id = ?, state = ?, restart_count = ?, health = ?, seen_at = ?
              WHERE service_id = ? AND container_id = ? AND state = ? AND restart_count = ? AND health = ?`,
      )
      .run(
        next.containerId,
        next.state,
        next.restartCount,
        next.health,
        now,
        serviceId,
        expected.containerId,
        expected.state,
        expected.restartCount,
        expected.health,
      ).changes === 1
  );
}

/**
 * The containers were seen unchanged now: moves their snapshots' time forward (never back). One statement whatever
 * the number of services, so a tick's SQLite work stays flat as the host grows; being one statement, it is
 * atomic on its own. The ids go in as one JSON array, as SQLite caps the number of bound parameters.
 */
export function touchSnapshots(db: StateDb, serviceIds: string[], now: number): void {
  if (serviceIds.length === 0) return;
  db.prepare(
    `UPDATE keeper_container_snapshots SET seen_at = ?
              WHERE service_id IN (SELECT value FROM json_each(?)) AND seen_at < ?`,
  ).run(now, JSON.stringify(serviceIds), now);
}

/** Sets the snapshot outright, e.g. after keeper itself (re)started the container and reset its RestartCount. */
export function setSnapshot(db: StateDb, serviceId: string, snapshot: ContainerSnapshot, now: number): void {
  db.prepare(
    `INSERT INTO keeper_container_snapshots (service_id, container_id, state, restart_count, health, seen_at)
              VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(service_id) DO UPDATE SET container_id = excluded.container_id,
              state = excluded.state, restart_count = excluded.restart_count, health = excluded.health, seen_at = excluded.seen_at`,
  ).run(serviceId, snapshot.containerId, snapshot.state, snapshot.restartCount, snapshot.health, now);
}

/** Drops snapshots of services that no longer exist. */
export function pruneSnapshots(db: StateDb): number {
  return db.prepare('DELETE FROM keeper_container_snapshots WHERE service_id NOT IN (SELECT id FROM services)').run().changes;
}

/** Whether keeper's snapshot is still `expected` (null: none yet): a crash on it can still be recorded. */
export function snapshotIsStill(db: StateDb, serviceId: string, expected: ContainerSnapshot | null): boolean {
  const r = db
    .prepare('SELECT container_id, state, restart_count, health FROM keeper_container_snapshots WHERE service_id = ?')
    .get(serviceId) as { container_id: string; state: string; restart_count: number; health: string } | undefined;
  if (!expected) return r === undefined;
  return (
    !!r &&
    r.container_id === expected.containerId &&
    r.state === expected.state &&
    r.restart_count === expected.restartCount &&
    r.health === expected.health
  );
}
