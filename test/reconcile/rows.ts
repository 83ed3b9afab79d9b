/** Service rows and their real containers, the way ah lays them out (its schema and its container names and labels). No vitest imports: scripts use it too. */
import type { StateDb } from '../../src/db/open';
import type { ContainerSpec } from '../../src/docker/engine';
import { uniqueId, waitFor, type EngineFixture } from '../helpers/fixtures';

export const nowSec = () => Math.floor(Date.now() / 1000);

export function addTenant(db: StateDb, tenantId = uniqueId('tn')): string {
  db.prepare(`INSERT INTO tenants (id, name, email, created_at, updated_at) VALUES (?, ?, ?, 1700000000, 1700000000)`).run(
    tenantId,
    tenantId,
    `${tenantId}@example.com`,
  );
  return tenantId;
}

export interface ServiceFields {
  status?: string;
  containerId?: string | null;
  crashCount?: number;
  crashWindowStart?: number | null;
  circuitOpen?: number;
  circuitOpenCount?: number;
  circuitRetryAt?: number | null;
  updatedAt?: number;
}

export function addService(db: StateDb, tenantId: string, f: ServiceFields = {}, id = uniqueId('svc')): string {
  db.prepare(
    `INSERT INTO services (id, tenant_id, name, status, image, container_id, created_at, updated_at, crash_count,
      crash_window_start, circuit_open, circuit_open_count, circuit_retry_at)
    VALUES (?, ?, ?, ?, 'keeper-test/busybox:latest', ?, 1700000000, ?, ?, ?, ?, ?, ?)`,
  ).run(
    id,
    tenantId,
    id,
    f.status ?? 'running',
    f.containerId === undefined ? null : f.containerId,
    f.updatedAt ?? nowSec(),
    f.crashCount ?? 0,
    f.crashWindowStart ?? null,
    f.circuitOpen ?? 0,
    f.circuitOpenCount ?? 0,
    f.circuitRetryAt ?? null,
  );
  return id;
}

export function service(db: StateDb, id: string) {
  return db.prepare('SELECT * FROM services WHERE id = ?').get(id) as {
    status: string;
    crash_count: number;
    crash_window_start: number | null;
    circuit_open: number;
    circuit_open_count: number;
    circuit_retry_at: number | null;
    last_error: string;
    container_id: string | null;
    last_crashed_at: number | null;
  };
}

export function deployments(db: StateDb, serviceId: string) {
  return db
    .prepare('SELECT id, status, trigger, error_message, container_id, build_id FROM deployments WHERE service_id = ? ORDER BY rowid')
    .all(serviceId) as {
    id: string;
    status: string;
    trigger: string;
    error_message: string;
    container_id: string;
    build_id: string | null;
  }[];
}

/** A service container as ah runs it: ah-<tenant>-<service>, labels ah.tenant/ah.service (+ ah.managed), no network. */
export async function runServiceContainer(
  engine: EngineFixture,
  tenantId: string,
  serviceId: string,
  spec: Partial<ContainerSpec> = {},
  start = true,
): Promise<string> {
  return engine.run(
    {
      name: `ah-${tenantId}-${serviceId}`,
      labels: { 'ah.tenant': tenantId, 'ah.service': serviceId, 'ah.managed': 'true' },
      restartPolicy: 'unless-stopped',
      network: 'none',
      ...spec,
    },
    start,
  );
}

/**
 * A service row over a container that ran `exit <code>` with no restart policy and has exited: what the next
 * tick counts as one crash. Returns the service and container ids.
 */
export async function addServiceWithExitedContainer(
  engine: EngineFixture,
  db: StateDb,
  tenantId: string,
  fields: ServiceFields = {},
  code = 3,
): Promise<{ sid: string; cid: string }> {
  const sid = uniqueId('svc');
  const cid = await runServiceContainer(engine, tenantId, sid, { cmd: ['sh', '-c', `exit ${code}`], restartPolicy: 'no' });
  await waitFor('container to exit', async () => (await engine.docker.inspectContainer(cid)).status === 'exited');
  addService(db, tenantId, { containerId: cid, ...fields }, sid);
  return { sid, cid };
}
