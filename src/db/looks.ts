/** keeper_container_looks: what the reconciler last saw of each service's container (see keeper_101). */
import type { ContainerLook } from '../contracts/reconcile';
import type { StateDb } from './open';

export interface StoredLook extends ContainerLook {
  lookedAt: number;
}

export function readLooks(db: StateDb): Map<string, StoredLook> {
  const rows = db.prepare('SELECT service_id, container_id, state, restart_count, health, looked_at FROM keeper_container_looks').all() as {
    service_id: string;
    container_id: string;
    state: string;
    restart_count: number;
    health: string;
    looked_at: number;
  }[];
  return new Map(
    rows.map((r) => [
      r.service_id,
      { containerId: r.container_id, state: r.state, restartCount: r.restart_count, health: r.health, lookedAt: r.looked_at },
    ]),
  );
}

/**
 * Compare-and-set: replaces the look `expected` (null: no row yet) by `next`. Returns false when the row is
 * no longer what the caller saw, i.e. this transition was already applied (a retry) or raced.
 */
export function swapLook(db: StateDb, serviceId: string, expected: ContainerLook | null, next: ContainerLook, now: number): boolean {
  if (expected === null) {
    return (
      db
        .prepare(
          `INSERT INTO keeper_container_looks (service_id, container_id, state, restart_count, health, looked_at)
                VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(service_id) DO NOTHING`,
        )
        .run(serviceId, next.containerId, next.state, next.restartCount, next.health, now).changes === 1
    );
  }
  return (
    db
      .prepare(
        `UPDATE keeper_container_looks SET container_id = ?, state = ?, restart_count = ?, health = ?, looked_at = ?
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
 * The containers were seen unchanged now: moves their looks' time forward (never back). One statement whatever
 * the number of services, so a tick's SQLite work stays flat as the host grows; being one statement, it is
 * atomic on its own. The ids go in as one JSON array, as SQLite caps the number of bound parameters.
 */
export function touchLooks(db: StateDb, serviceIds: string[], now: number): void {
  if (serviceIds.length === 0) return;
  db.prepare(
    `UPDATE keeper_container_looks SET looked_at = ?
              WHERE service_id IN (SELECT value FROM json_each(?)) AND looked_at < ?`,
  ).run(now, JSON.stringify(serviceIds), now);
}

/** Sets the look outright, e.g. after keeper itself (re)started the container and reset its RestartCount. */
export function setLook(db: StateDb, serviceId: string, look: ContainerLook, now: number): void {
  db.prepare(
    `INSERT INTO keeper_container_looks (service_id, container_id, state, restart_count, health, looked_at)
              VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(service_id) DO UPDATE SET container_id = excluded.container_id,
              state = excluded.state, restart_count = excluded.restart_count, health = excluded.health, looked_at = excluded.looked_at`,
  ).run(serviceId, look.containerId, look.state, look.restartCount, look.health, now);
}

/** Drops looks of services that no longer exist. */
export function pruneLooks(db: StateDb): number {
  return db.prepare('DELETE FROM keeper_container_looks WHERE service_id NOT IN (SELECT id FROM services)').run().changes;
}

/** Whether keeper's last look is still `expected` (null: none yet): a crash on it can still be recorded. */
export function lookIsStill(db: StateDb, serviceId: string, expected: ContainerLook | null): boolean {
  const r = db
    .prepare('SELECT container_id, state, restart_count, health FROM keeper_container_looks WHERE service_id = ?')
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
