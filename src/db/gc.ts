/**
 * The garbage collector's queries. One query per sweep class loads everything any table references, so
 * the orphan test costs the same whatever the number of resources, and a DB error means "skip the class",
 * never "nothing references it".
 */
import type { BuildAttribution, References, SnapshotRow } from '../policy/gc';
import type { StateDb } from './open';

/**
 * Every container id and volume name referenced by any row of services, databases, environments, kanbans
 * or warm_pool, whatever its status, plus every services.image. A claimed pool volume is referenced through
 * environments.volume_name; a pool container through warm_pool or environments.container_id.
 */
export function loadGcReferences(db: StateDb): References {
  const rows = db
    .prepare(
      `SELECT 'c' AS kind, container_id AS value FROM services WHERE container_id IS NOT NULL AND container_id != ''
       UNION ALL SELECT 'c', container_id FROM databases WHERE container_id IS NOT NULL AND container_id != ''
       UNION ALL SELECT 'c', container_id FROM environments WHERE container_id IS NOT NULL AND container_id != ''
       UNION ALL SELECT 'c', container_id FROM kanbans WHERE container_id IS NOT NULL AND container_id != ''
       UNION ALL SELECT 'c', container_id FROM warm_pool WHERE container_id IS NOT NULL AND container_id != ''
       UNION ALL SELECT 'v', volume_name FROM databases WHERE volume_name IS NOT NULL AND volume_name != ''
       UNION ALL SELECT 'v', volume_name FROM environments WHERE volume_name IS NOT NULL AND volume_name != ''
       UNION ALL SELECT 'v', volume_name FROM kanbans WHERE volume_name IS NOT NULL AND volume_name != ''
       UNION ALL SELECT 'v', volume_name FROM warm_pool WHERE volume_name IS NOT NULL AND volume_name != ''
       UNION ALL SELECT 'i', image FROM services WHERE image IS NOT NULL AND image != ''`,
    )
    .all() as { kind: 'c' | 'v' | 'i'; value: string }[];
  const refs: References = { containerIds: new Set(), volumeNames: new Set(), serviceImages: new Set() };
  for (const r of rows) {
    const value = String(r.value);
    if (r.kind === 'c') refs.containerIds.add(value);
    else if (r.kind === 'v') refs.volumeNames.add(value);
    else refs.serviceImages.add(value);
  }
  return refs;
}

export function listSnapshotRows(db: StateDb): SnapshotRow[] {
  return (
    db.prepare('SELECT id, tenant_id, service_id, image_ref, created_at FROM snapshots').all() as {
      id: string;
      tenant_id: string;
      service_id: string;
      image_ref: string;
      created_at: number;
    }[]
  ).map((r) => ({
    id: r.id,
    tenantId: r.tenant_id,
    serviceId: r.service_id,
    imageRef: r.image_ref ?? '',
    createdAt: Number(r.created_at),
  }));
}

/** Deleting an already deleted row is success: the activity may be retried. */
export function deleteSnapshotRow(db: StateDb, id: string, tenantId: string): void {
  db.prepare('DELETE FROM snapshots WHERE id = ? AND tenant_id = ?').run(id, tenantId);
}

/** What attributes ah's build images to services: every service row, and each builds row's image tag. */
export function loadBuildAttribution(db: StateDb): BuildAttribution {
  const services = (db.prepare('SELECT id, tenant_id FROM services').all() as { id: string; tenant_id: string }[]).map((r) => ({
    id: String(r.id),
    tenantId: String(r.tenant_id),
  }));
  const builds = new Map<string, { serviceId: string; createdAt: number }>();
  const rows = db.prepare(`SELECT image, service_id, created_at FROM builds WHERE image IS NOT NULL AND image != ''`).all() as {
    image: string;
    service_id: string;
    created_at: number;
  }[];
  for (const r of rows) builds.set(String(r.image), { serviceId: String(r.service_id), createdAt: Number(r.created_at) });
  return { services, builds };
}
