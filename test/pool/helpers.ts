/** Shared by the pool tests: a state DB whose templates run the test image, a tenant, and full cleanup. */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterEach } from 'vitest';
import type { StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { isNotFound } from '../../src/docker/errors';
import { freshDb, TEST_IMAGE, uniqueId } from '../helpers/fixtures';
import { devServerForFile } from '../helpers/temporal';

/** DBs poolDb() opened that the current test has not cleaned up yet. */
const opened: StateDb[] = [];

/**
 * The setup of a pool test file: the shared dev server, and after each test every DB poolDb() opened is
 * cleaned up with all that its rows name on the engine.
 */
export function poolTestFile(): TestWorkflowEnvironment {
  const env = devServerForFile();
  afterEach(async () => {
    for (const db of opened.splice(0)) if (db.open) await cleanupPoolDb(db);
  });
  return env;
}

export function poolDb(): { db: StateDb; file: string; tenant: string } {
  const { db, file } = freshDb();
  opened.push(db);
  db.prepare('UPDATE environment_templates SET base_image = ?').run(TEST_IMAGE);
  const tenant = uniqueId('tn');
  db.prepare(`INSERT INTO tenants (id, name, email, created_at, updated_at) VALUES (?, ?, ?, 1700000000, 1700000000)`).run(
    tenant,
    tenant,
    `${tenant}@example.com`,
  );
  return { db, file, tenant };
}

export function addTenant(db: StateDb): string {
  const tenant = uniqueId('tn');
  db.prepare(`INSERT INTO tenants (id, name, email, created_at, updated_at) VALUES (?, ?, ?, 1700000000, 1700000000)`).run(
    tenant,
    tenant,
    `${tenant}@example.com`,
  );
  return tenant;
}

/** Removes every container, volume and tenant network this DB's rows name, plus pool leftovers by label. */
export async function cleanupPoolDb(db: StateDb, docker = new DockerClient()): Promise<void> {
  const rows = [
    ...(db.prepare('SELECT container_id c, volume_name v FROM warm_pool').all() as { c: string; v: string }[]),
    ...(db.prepare('SELECT container_id c, volume_name v FROM environments').all() as { c: string; v: string }[]),
  ];
  const tenants = db.prepare('SELECT id FROM tenants').pluck().all() as string[];
  const envIds = db.prepare('SELECT id FROM environments').pluck().all() as string[];
  const poolContainers = await docker.listContainers({ 'ah.type': 'warm-pool' });
  for (const c of [...rows.map((r) => r.c).filter(Boolean), ...poolContainers.map((c) => c.id)]) {
    await docker.removeContainer(c, { force: true }).catch((e) => {
      if (!isNotFound(e)) throw e;
    });
  }
  for (const t of tenants) {
    for (const c of await docker.listContainers({ 'ah.tenant': t }))
      await docker.removeContainer(c.id, { force: true }).catch(() => undefined);
  }
  const volumes = new Set([...rows.map((r) => r.v).filter(Boolean), ...envIds.map((id) => `ah-env-${id}`)]);
  for (const v of await docker.listVolumes('ah-pool-')) volumes.add(v.name);
  for (const v of volumes)
    await docker.removeVolume(v).catch((e) => {
      if (!isNotFound(e)) throw e;
    });
  for (const t of tenants) await docker.removeNetwork(`ah-tenant-${t}`).catch(() => undefined);
  await docker.removeNetwork('ah-pool').catch(() => undefined);
  db.close();
}

export function readyByTemplate(db: StateDb): Record<string, number> {
  const rows = db.prepare(`SELECT template_id t, COUNT(*) n FROM warm_pool WHERE status = 'ready' GROUP BY template_id`).all() as {
    t: string;
    n: number;
  }[];
  return Object.fromEntries(rows.map((r) => [r.t, r.n]));
}
