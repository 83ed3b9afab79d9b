/**
 * The operator's commands on a standalone host, through the built CLI against the real engine and a real
 * state DB: a service's whole lifecycle, `keeper status`, and the refusals that protect the loops.
 */
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { keeper } from '../helpers/cli';
import { AH_CONFINEMENT, confinementOf, TEST_IMAGE, WEB_IMAGE, tempDir, uniqueId } from '../helpers/fixtures';

const dir = tempDir();
const db = path.join(dir, 'state.db');
openStateDb(db).close(); // as the host's worker would have: only `keeper worker` creates a state DB
const docker = new DockerClient();
const tenant = uniqueId('op-');
const created: string[] = [];
afterAll(async () => {
  for (const id of created) await docker.removeContainer(id, { force: true }).catch(() => undefined);
  await docker.removeNetwork(`ah-tenant-${tenant}`).catch(() => undefined);
});

const row = (id: string) => {
  const d = openStateDb(db);
  try {
    return d.prepare('SELECT status, container_id, circuit_open FROM services WHERE id = ?').get(id) as {
      status: string;
      container_id: string;
      circuit_open: number;
    };
  } finally {
    d.close();
  }
};

describe('keeper service and keeper status', () => {
  let id = '';

  it('creates a service the way ah runs one', async () => {
    const r = await keeper([
      'service',
      'create',
      '--db',
      db,
      '--tenant',
      tenant,
      '--name',
      'web',
      '--image',
      WEB_IMAGE,
      '--env',
      'GREETING=hi',
      '--json',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const s = JSON.parse(r.stdout);
    id = s.id;
    created.push(s.containerId);
    expect(s).toMatchObject({ tenantId: tenant, name: 'web', status: 'running', image: WEB_IMAGE });
    const c = await docker.inspectContainer(s.containerId);
    expect(c).toMatchObject({
      name: `ah-${tenant}-${id}`,
      status: 'running',
      labels: { 'ah.tenant': tenant, 'ah.service': id, 'ah.managed': 'true' },
    });
    expect(c.networks).toEqual([`ah-tenant-${tenant}`]);
    expect(await confinementOf(s.containerId)).toEqual({ ...AH_CONFINEMENT, readonlyRootfs: true });
    const d = openStateDb(db);
    const deployments = d.prepare('SELECT status, trigger FROM deployments WHERE service_id = ?').all(id);
    d.close();
    expect(deployments).toEqual([{ status: 'running', trigger: 'manual' }]);
  });

  it('shows it in keeper status, with the pool, disk and databases', async () => {
    const r = await keeper(['status', '--db', db, '--json']);
    expect(r.code).toBe(0);
    const s = JSON.parse(r.stdout);
    expect(s.services).toEqual([expect.objectContaining({ id, status: 'running', crashesInWindow: 0, circuitOpen: false })]);
    expect(s.pool.templates.map((t: { name: string }) => t.name)).toEqual(['default', 'node', 'python', 'go']);
    expect(s.disk.paths.map((p: { role: string }) => p.role)).toEqual(expect.arrayContaining(['state DB directory']));
    expect(s.events).toMatchObject({ state: 'not started' });
    const text = await keeper(['status', '--db', db]);
    expect(text.stdout).toMatch(new RegExp(`${id}\\s+${tenant}\\s+web\\s+running\\s+0\\s+closed`));
  });

  it('stops (marked stopped first), starts, restarts and shows logs', async () => {
    expect((await keeper(['service', 'stop', id, '--db', db])).code).toBe(0);
    expect(row(id).status).toBe('stopped');
    expect((await docker.inspectContainer(row(id).container_id)).status).toBe('exited');
    expect((await keeper(['service', 'start', id, '--db', db])).code).toBe(0);
    expect(row(id).status).toBe('running');
    expect((await keeper(['service', 'restart', id, '--db', db])).code).toBe(0);
    expect((await docker.inspectContainer(row(id).container_id)).status).toBe('running');
    const logs = await keeper(['service', 'logs', id, '--db', db]);
    expect(logs.code).toBe(0);
  });

  it('refuses to start while the circuit is open, pointing to keeper circuit reset', async () => {
    const d = openStateDb(db);
    d.prepare(`UPDATE services SET status = 'crashed', circuit_open = 1, circuit_retry_at = ? WHERE id = ?`).run(
      Math.floor(Date.now() / 1000) + 1800,
      id,
    );
    d.close();
    const r = await keeper(['service', 'start', id, '--db', db]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`keeper: cannot start ${id}: its circuit breaker is open; run \`keeper circuit reset ${id}\`\n`);
    expect(row(id).status).toBe('crashed');
  });

  it('refuses bad arguments with one line and exit 2', async () => {
    const bad = await keeper(['service', 'create', '--db', db, '--tenant', 'Bad Tenant', '--name', 'x', '--image', TEST_IMAGE]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(`keeper: invalid --tenant "Bad Tenant": use lowercase letters, digits and '-'\n`);
    const env = await keeper([
      'service',
      'create',
      '--db',
      db,
      '--tenant',
      tenant,
      '--name',
      'x',
      '--image',
      TEST_IMAGE,
      '--env',
      'NOEQUALS',
    ]);
    expect(env.code).toBe(2);
    expect(env.stderr).toBe('keeper: invalid --env "NOEQUALS": use KEY=VALUE\n');
  });

  it('removes the container and the row', async () => {
    const cid = row(id).container_id;
    expect((await keeper(['service', 'rm', id, '--db', db])).code).toBe(0);
    expect(row(id)).toBeUndefined();
    await expect(docker.inspectContainer(cid)).rejects.toMatchObject({ isNotFound: true });
    const missing = await keeper(['service', 'start', id, '--db', db]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`keeper: no service ${id}\n`);
  });
});
