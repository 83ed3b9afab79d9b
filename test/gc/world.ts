/**
 * Rows and engine resources for GC tests: DB rows in ah's schema that reference (or do not) real containers,
 * volumes and images on the test engine. Every name is unique, so a test never depends on an empty engine.
 */
import Docker from 'dockerode';
import type { StateDb } from '../../src/db/open';
import { dockerOptions } from '../../src/docker/client';
import { TEST_IMAGE, uniqueId } from '../helpers/fixtures';

export const T0 = 1_700_000_000;

export function tenant(db: StateDb, id = uniqueId('tn')): string {
  db.prepare(`INSERT INTO tenants (id, name, email, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`).run(
    id,
    id,
    `${id}@example.com`,
    T0,
    T0,
  );
  return id;
}

export function service(db: StateDb, t: string, opts: { containerId?: string; image?: string; id?: string } = {}): string {
  const id = opts.id ?? uniqueId('svc');
  db.prepare(
    `INSERT INTO services (id, tenant_id, name, status, image, container_id, created_at, updated_at) VALUES (?, ?, ?, 'running', ?, ?, ?, ?)`,
  ).run(id, t, id, opts.image ?? null, opts.containerId ?? null, T0, T0);
  return id;
}

export function database(db: StateDb, t: string, opts: { containerId?: string; volumeName?: string }): string {
  const id = uniqueId('db');
  db.prepare(
    `INSERT INTO databases (id, tenant_id, name, type, status, container_id, password_encrypted, volume_name, created_at, updated_at)
              VALUES (?, ?, ?, 'postgres', 'failed', ?, 'x', ?, ?, ?)`,
  ).run(id, t, id, opts.containerId ?? null, opts.volumeName ?? null, T0, T0);
  return id;
}

export function environment(db: StateDb, t: string, opts: { containerId?: string; volumeName?: string }): string {
  const id = uniqueId('env');
  db.prepare(
    `INSERT INTO environments (id, tenant_id, name, status, container_id, volume_name, created_at, updated_at) VALUES (?, ?, ?, 'stopped', ?, ?, ?, ?)`,
  ).run(id, t, id, opts.containerId ?? '', opts.volumeName ?? '', T0, T0);
  return id;
}

/** kanbans are unique per tenant, so each gets a tenant of its own. */
export function kanban(db: StateDb, opts: { containerId?: string; volumeName?: string }): string {
  const t = tenant(db);
  const id = uniqueId('kb');
  db.prepare(
    `INSERT INTO kanbans (id, tenant_id, status, container_id, volume_name, created_at, updated_at) VALUES (?, ?, 'ready', ?, ?, ?, ?)`,
  ).run(id, t, opts.containerId ?? null, opts.volumeName ?? null, T0, T0);
  return id;
}

export function poolRow(db: StateDb, opts: { containerId: string; volumeName: string; status?: string }): string {
  const id = uniqueId('wp_');
  db.prepare(
    `INSERT INTO warm_pool (id, template_id, container_id, volume_name, status, created_at) VALUES (?, 'tmpl_default', ?, ?, ?, ?)`,
  ).run(id, opts.containerId, opts.volumeName, opts.status ?? 'ready', T0);
  return id;
}

export function snapshot(db: StateDb, t: string, serviceId: string, opts: { id?: string; imageRef: string; createdAt: number }): string {
  const id = opts.id ?? uniqueId('snap');
  db.prepare(`INSERT INTO snapshots (id, tenant_id, service_id, name, image_ref, created_at) VALUES (?, ?, ?, ?, ?, ?)`).run(
    id,
    t,
    serviceId,
    id,
    opts.imageRef,
    opts.createdAt,
  );
  return id;
}

export function snapshotIds(db: StateDb): string[] {
  return db.prepare('SELECT id FROM snapshots ORDER BY id').pluck().all() as string[];
}

/** A crash record as a tick writes it (the facts of an `exit 1`), recorded at `recordedAt` (unix seconds). Returns its id. */
export function crashRecord(db: StateDb, serviceId: string, recordedAt: number): string {
  const r = db
    .prepare(
      `INSERT INTO keeper_crash_records (service_id, container_id, died_at_ms, exit_code, seen_by, reason, window_start, recorded_at)
                        VALUES (?, 'c0ffee', ?, 1, 'look', 'exit code 1', ?, ?)`,
    )
    .run(serviceId, recordedAt * 1000, recordedAt, recordedAt);
  return String(r.lastInsertRowid);
}

export function crashRecordIds(db: StateDb): string[] {
  return (db.prepare('SELECT id FROM keeper_crash_records ORDER BY id').pluck().all() as number[]).map(String);
}

/** The raw engine, for fixtures the adapter has no method for (commit). */
export function rawDocker(): Docker {
  return new Docker(dockerOptions(process.env.DOCKER_HOST));
}

/**
 * A dangling image: commit a container twice under one tag, so the first image loses its tag. `label` is
 * baked in with a LABEL change. Returns the dangling image's id.
 */
export async function danglingImage(label: string | undefined): Promise<string> {
  const docker = rawDocker();
  const c = await docker.createContainer({ Image: TEST_IMAGE, Cmd: ['true'] });
  const repo = `keeper-gc-test/${uniqueId('dangle')}`;
  const changes = label ? { changes: `LABEL ${label}` } : {};
  try {
    const first = (await docker.getContainer(c.id).commit({ repo, tag: 'x', comment: 'first', ...changes })) as { Id: string };
    await docker.getContainer(c.id).commit({ repo, tag: 'x', comment: 'second', ...changes });
    return first.Id;
  } finally {
    await docker.getContainer(c.id).remove({ force: true });
    // The second image keeps the tag; it is not dangling and this fixture's business only.
    await docker
      .getImage(`${repo}:x`)
      .remove()
      .catch(() => undefined);
  }
}

export async function imageExists(id: string): Promise<boolean> {
  try {
    await rawDocker().getImage(id).inspect();
    return true;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return false;
    throw err;
  }
}
