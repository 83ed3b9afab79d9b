/**
 * Warm-pool SQL. warm_pool is ah's table (id, template_id, container_id, volume_name, status ready|claimed,
 * created_at); keeper writes it the way ah does and adds no column. A row is inserted only once its
 * container runs, so a `ready` row always names a real container. The runtime of each pool container is kept
 * beside it in keeper_container_runtimes (see keeper_1501).
 */
import type { StateDb } from './open';

export interface TemplateRow {
  id: string;
  name: string;
  baseImage: string;
  memoryMb: number;
  cpuMillicores: number;
  egressPolicy: string;
}

export interface PoolRow {
  id: string;
  templateId: string;
  containerId: string;
  volumeName: string;
  status: string;
  createdAt: number;
}

const TEMPLATE_COLUMNS = `id, name, base_image AS baseImage, memory_mb AS memoryMb, cpu_millicores AS cpuMillicores,
  egress_policy AS egressPolicy`;
const POOL_COLUMNS =
  'id, template_id AS templateId, container_id AS containerId, volume_name AS volumeName, status, created_at AS createdAt';

export function listTemplates(db: StateDb): TemplateRow[] {
  return db.prepare(`SELECT ${TEMPLATE_COLUMNS} FROM environment_templates ORDER BY rowid`).all() as TemplateRow[];
}

/** By id, then by name: `default` finds tmpl_default (ah's GetTemplate). */
export function findTemplate(db: StateDb, idOrName: string): TemplateRow | undefined {
  return (
    (db.prepare(`SELECT ${TEMPLATE_COLUMNS} FROM environment_templates WHERE id = ?`).get(idOrName) as TemplateRow | undefined) ??
    (db.prepare(`SELECT ${TEMPLATE_COLUMNS} FROM environment_templates WHERE name = ?`).get(idOrName) as TemplateRow | undefined)
  );
}

/** Ready rows per template id; templates without ready rows are absent. */
export function readyCounts(db: StateDb): Record<string, number> {
  const rows = db
    .prepare(`SELECT template_id AS templateId, COUNT(*) AS n FROM warm_pool WHERE status = 'ready' GROUP BY template_id`)
    .all() as { templateId: string; n: number }[];
  return Object.fromEntries(rows.map((r) => [r.templateId, r.n]));
}

/** Ready rows of every template (0 for one with none), then of template ids with ready rows but no template row. */
export function readyByTemplate(db: StateDb): { id: string; name: string | null; ready: number }[] {
  const ready = readyCounts(db);
  const templates = listTemplates(db);
  const rows = templates.map((t) => ({ id: t.id, name: t.name as string | null, ready: ready[t.id] ?? 0 }));
  for (const [id, n] of Object.entries(ready)) if (!templates.some((t) => t.id === id)) rows.push({ id, name: null, ready: n });
  return rows;
}

export function poolRows(db: StateDb, status?: 'ready' | 'claimed'): PoolRow[] {
  const sql = `SELECT ${POOL_COLUMNS} FROM warm_pool`;
  return (
    status ? db.prepare(`${sql} WHERE status = ? ORDER BY created_at, id`).all(status) : db.prepare(`${sql} ORDER BY created_at, id`).all()
  ) as PoolRow[];
}

/**
 * Whether a pool entry has been made already: its row exists in any status, or an environment holds its
 * volume (it was claimed and its row removed). A retried creation stops here instead of making a duplicate.
 */
export function poolEntryDone(db: StateDb, entryId: string, volumeName: string): boolean {
  const row = db.prepare('SELECT 1 FROM warm_pool WHERE id = ?').get(entryId);
  if (row) return true;
  return !!db.prepare('SELECT 1 FROM environments WHERE volume_name = ?').get(volumeName);
}

/**
 * INSERT OR IGNORE: a retried activity that already inserted the row changes nothing. The container's runtime
 * is recorded in the same transaction, so no claim ever sees the row without it.
 */
export function insertReadyEntry(
  db: StateDb,
  e: { id: string; templateId: string; containerId: string; volumeName: string; createdAt: number; runtime: string },
): boolean {
  const insert = db.prepare(
    `INSERT OR IGNORE INTO warm_pool (id, template_id, container_id, volume_name, status, created_at)
     VALUES (?, ?, ?, ?, 'ready', ?)`,
  );
  return db
    .transaction(() => {
      recordContainerRuntime(db, e.containerId, e.runtime, e.createdAt);
      return insert.run(e.id, e.templateId, e.containerId, e.volumeName, e.createdAt).changes === 1;
    })
    .immediate();
}

/** What an inspect said of a pool container's runtime; it cannot change, so the latest look simply wins. */
export function recordContainerRuntime(db: StateDb, containerId: string, runtime: string, now: number): void {
  db.prepare(
    `INSERT INTO keeper_container_runtimes (container_id, runtime, recorded_at) VALUES (?, ?, ?)
     ON CONFLICT(container_id) DO UPDATE SET runtime = excluded.runtime, recorded_at = excluded.recorded_at`,
  ).run(containerId, runtime, now);
}

/** The recorded runtime of each container a ready row names; absent: not recorded yet. */
export function readyRuntimes(db: StateDb): Map<string, string> {
  const rows = db
    .prepare(
      `SELECT r.container_id AS containerId, r.runtime FROM keeper_container_runtimes r
              JOIN warm_pool w ON w.container_id = r.container_id WHERE w.status = 'ready'`,
    )
    .all() as { containerId: string; runtime: string }[];
  return new Map(rows.map((r) => [r.containerId, r.runtime]));
}

/** Runtimes of containers no pool row names any more (claimed and finished, pruned, drained): not needed. */
export function forgetUnpooledRuntimes(db: StateDb): number {
  return db.prepare(`DELETE FROM keeper_container_runtimes WHERE container_id NOT IN (SELECT container_id FROM warm_pool)`).run().changes;
}

/** Deletes a row only if it is still in the expected status (a ghost prune must not delete a fresh claim). */
export function deletePoolRow(db: StateDb, id: string, status: 'ready' | 'claimed'): boolean {
  return db.prepare('DELETE FROM warm_pool WHERE id = ? AND status = ?').run(id, status).changes === 1;
}

/**
 * Claimed rows whose environment row already holds their container or volume: the claim finished, only the
 * row's removal did not happen (ah leaves these for ever, W-P6). Deleting them touches no Docker resource.
 */
export function deleteFinishedClaims(db: StateDb): number {
  return db
    .prepare(
      `DELETE FROM warm_pool WHERE status = 'claimed' AND (
         volume_name IN (SELECT volume_name FROM environments WHERE volume_name != '')
         OR container_id IN (SELECT container_id FROM environments WHERE container_id != ''))`,
    )
    .run().changes;
}

/** Container ids and volume names that some environment row or claimed pool row holds: never pool leftovers. */
export function heldPoolResources(db: StateDb): { containers: Set<string>; volumes: Set<string> } {
  const rows = db
    .prepare(
      `SELECT container_id AS containerId, volume_name AS volumeName FROM environments
              UNION ALL SELECT container_id, volume_name FROM warm_pool WHERE status = 'claimed'`,
    )
    .all() as { containerId: string | null; volumeName: string | null }[];
  return {
    containers: new Set(rows.map((r) => r.containerId ?? '').filter(Boolean)),
    volumes: new Set(rows.map((r) => r.volumeName ?? '').filter(Boolean)),
  };
}
