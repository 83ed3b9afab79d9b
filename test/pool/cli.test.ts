/**
 * `keeper pool …` in-process: the real CLI parser and output, a real SQLite file, the real engine, and the
 * shared dev server with a worker for this host.
 */
import { describe, expect, inject, it } from 'vitest';
import type { PoolStatusReport } from '../../src/host/pool/admin';
import type { StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { testSettings, TEST_TENANT_RUNTIME } from '../helpers/fixtures';
import { keeperInProcess } from '../helpers/cli';
import { keeperWorker } from '../helpers/temporal';
import { poolDb, poolTestFile } from './helpers';

const env = poolTestFile();
let db: StateDb;
const docker = new DockerClient();

describe('keeper pool', () => {
  it('refill --once, status, claim and drain', async () => {
    const t = poolDb();
    db = t.db;
    const settings = testSettings({ db: t.file });
    const flags = [
      '--db',
      t.file,
      '--host-id',
      settings.hostId,
      '--temporal-address',
      inject('devServerAddress'),
      '--disk-warn',
      '99',
      '--disk-block',
      '100',
      '--tenant-runtime',
      TEST_TENANT_RUNTIME,
    ];
    const worker = await keeperWorker(env, { db, docker, settings });

    const refill = await worker.runUntil(keeperInProcess(['pool', 'refill', '--once', '--json', ...flags]));
    expect(refill.err).toBe('');
    expect(refill.code).toBe(0);
    expect(JSON.parse(refill.out)).toMatchObject({ blocked: false, ready: { tmpl_default: 2, tmpl_node: 2, tmpl_python: 2 } });

    const status = await keeperInProcess(['pool', 'status', '--json', ...flags]);
    expect(status.code).toBe(0);
    const s = JSON.parse(status.out) as PoolStatusReport;
    expect(Object.fromEntries(s.templates.map((x) => [x.name, x.ready]))).toEqual({ default: 2, node: 2, python: 2, go: 0 });
    expect(s.total).toBe(6);
    expect(s.lastRefill?.result.created).toHaveLength(6);
    const human = await keeperInProcess(['pool', 'status', ...flags]);
    expect(human.out).toMatch(/^TEMPLATE\s+ID\s+POOLED\s+READY\ndefault\s+tmpl_default\s+yes\s+2\n/);
    expect(human.out).toContain('go        tmpl_go       no      0');
    expect(human.out).toMatch(/total ready 6 \(size 2 per template, max 6\)\nlast refill \S+, ok: 6 created$/m);

    const claim = await keeperInProcess([
      'pool',
      'claim',
      '--tenant',
      t.tenant,
      '--name',
      'cli1',
      '--template',
      'node',
      '--json',
      ...flags,
    ]);
    expect(claim.code).toBe(0);
    const c = JSON.parse(claim.out);
    expect(c).toMatchObject({
      mode: 'warm',
      templateId: 'tmpl_node',
      volume: expect.stringMatching(/^ah-pool-wp_/),
      containerName: `ah-env-${t.tenant}-${c.envId}`,
    });
    expect(c.refill).toMatch(/^not requested \(.*\); the next pool run refills$/); // no pool schedule on this test host

    const drain = await keeperInProcess(['pool', 'drain', '--json', ...flags]);
    expect(drain.code).toBe(0);
    expect(JSON.parse(drain.out)).toMatchObject({ rowsDeleted: 5, errors: [] });
    expect(db.prepare('SELECT COUNT(*) FROM warm_pool').pluck().get()).toBe(0);
    const left = await docker.listContainers({ 'ah.type': 'warm-pool' });
    expect(left.map((x) => x.id)).toEqual([c.containerId]); // the claimed one belongs to its environment now
    expect((await docker.listVolumes('ah-pool-')).map((v) => v.name)).toEqual([c.volume]);
  });

  it('exit code 2 with one line for bad arguments', async () => {
    const t = poolDb();
    db = t.db;
    const flags = ['--db', t.file, '--tenant-runtime', TEST_TENANT_RUNTIME];
    const noOnce = await keeperInProcess(['pool', 'refill', ...flags]);
    expect(noOnce).toMatchObject({ code: 2, err: 'keeper: pool refill needs --once (the pool schedule refills every --pool-interval)\n' });
    const noTenant = await keeperInProcess(['pool', 'claim', '--tenant', 'nobody', '--name', 'x', ...flags]);
    expect(noTenant).toMatchObject({ code: 2, err: 'keeper: tenant "nobody" not found\n' });
    const badSetting = await keeperInProcess(['pool', 'status', '--pool-size', 'many', ...flags]);
    expect(badSetting.code).toBe(2);
    expect(badSetting.err).toMatch(/^keeper: option '--pool-size <value>' argument 'many' is invalid\. must be an integer/);
  });
});
