/**
 * keeper's tenant containers under real gVisor (Debian's runsc, scripts/provision-gvisor.sh) on an engine of
 * this file's own, in its own network namespace, with runsc registered WITHOUT networking (see helpers.ts: runsc
 * with networking cannot start on these machines). Pool refills, cold environments and services run under runsc
 * and their processes see gVisor's kernel; a pool container of another runtime is replaced, never claimed; and
 * `keeper pool refill --once` starts here with the default runtime.
 */
import os from 'node:os';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import type { StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { isNotFound } from '../../src/docker/errors';
import { claimEnvironment } from '../../src/host/pool/claim';
import { createService } from '../../src/host/services';
import { taskQueueFor } from '../../src/ids';
import type { RawSettings, Settings } from '../../src/settings';
import { poolRefill } from '../../src/workflows';
import type { PoolRefillResult } from '../../src/contracts/pool';
import { keeper } from '../helpers/cli';
import { testDeps, testSettings, uniqueId, WEB_IMAGE } from '../helpers/fixtures';
import { devServerForFile, keeperWorker } from '../helpers/temporal';
import { cleanupPoolDb, poolDb, readyByTemplate } from '../pool/helpers';
import { dockerCli, GVISOR_KERNEL, gvisorEngine, interfacesSeenBy, kernelSeenBy, runtimeOf, type GvisorEngine } from './helpers';

const env = devServerForFile();
let engine: GvisorEngine;
let docker: DockerClient;
let db: StateDb | undefined;

beforeAll(() => {
  engine = gvisorEngine('gvisor');
  docker = new DockerClient(engine.dockerHost);
});
afterEach(async () => {
  if (db?.open) await cleanupPoolDb(db, docker);
  db = undefined;
});
afterAll(() => engine?.stop());

/** Settings of a host on the gVisor engine: runsc unless `runtime` says otherwise (keeper's default, named). */
function settingsFor(file: string, runtime: 'runsc' | 'runc', extra: RawSettings = {}): Settings {
  return testSettings({ db: file, tenantRuntime: runtime, diskWarn: '99', diskBlock: '100', pooledTemplates: 'default', ...extra });
}

/** One poolRefill workflow run against the gVisor engine; with its wall time. */
async function refill(settings: Settings): Promise<{ result: PoolRefillResult; ms: number }> {
  const worker = await keeperWorker(env, { db: db!, docker, settings });
  const t0 = performance.now();
  const result = await worker.runUntil(
    env.client.workflow.execute(poolRefill, { taskQueue: taskQueueFor(settings.hostId), workflowId: uniqueId('pool-refill-') }),
  );
  return { result, ms: Math.round(performance.now() - t0) };
}

const readyContainers = () =>
  db!.prepare(`SELECT id, container_id FROM warm_pool WHERE status = 'ready' ORDER BY id`).all() as { id: string; container_id: string }[];

describe('tenant containers under gVisor', () => {
  it("a refill makes pool containers under runsc, whose processes see gVisor's kernel, not the host's", async () => {
    const t = poolDb();
    db = t.db;
    const { result, ms } = await refill(settingsFor(t.file, 'runsc', { poolSize: '2' }));
    expect(result.failed).toEqual([]);
    expect(readyByTemplate(db)).toEqual({ tmpl_default: 2 });
    for (const row of readyContainers()) {
      expect(runtimeOf(engine, row.container_id)).toBe('runsc');
      expect(kernelSeenBy(engine, row.container_id)).toBe(GVISOR_KERNEL);
      // Docker attaches it to ah-pool; inside the sandbox (runsc --network=none here) there is only loopback.
      expect((await docker.inspectContainer(row.container_id)).networks).toEqual(['ah-pool']);
      expect(interfacesSeenBy(engine, row.container_id)).toEqual(['lo']);
    }
    expect(os.release()).not.toBe(GVISOR_KERNEL);
    console.log(`refill of 2 pool containers under runsc: ${ms} ms`);
  });

  it('a cold environment runs under runsc with the tenant network attached; a runc one on the same engine sees its interface', async () => {
    const t = poolDb();
    db = t.db;
    const cold = await claimEnvironment({ db, docker, tenantRuntime: 'runsc' }, { tenant: t.tenant, name: 'gv1', template: 'go' });
    expect(cold.mode).toBe('cold');
    expect(runtimeOf(engine, cold.containerId)).toBe('runsc');
    expect(kernelSeenBy(engine, cold.containerId)).toBe(GVISOR_KERNEL);
    expect((await docker.inspectContainer(cold.containerId)).networks).toEqual([`ah-tenant-${t.tenant}`]);
    expect(interfacesSeenBy(engine, cold.containerId)).toEqual(['lo']);

    const control = await claimEnvironment({ db, docker, tenantRuntime: 'runc' }, { tenant: t.tenant, name: 'rc1', template: 'go' });
    expect(runtimeOf(engine, control.containerId)).toBe('runc');
    expect(kernelSeenBy(engine, control.containerId)).toBe(os.release());
    expect(interfacesSeenBy(engine, control.containerId)).toEqual(['eth0', 'lo']);
  });

  it('a pool container made under another runtime is never claimed: the refill replaces it, then claims get runsc', async () => {
    const t = poolDb();
    db = t.db;
    const before = await refill(settingsFor(t.file, 'runc', { poolSize: '1' })); // e.g. before the setting changed
    const [foreign] = readyContainers();
    expect(runtimeOf(engine, foreign.container_id)).toBe('runc');

    const first = await claimEnvironment({ db, docker, tenantRuntime: 'runsc' }, { tenant: t.tenant, name: 'gv1' });
    expect(first.mode).toBe('cold');
    expect(first.containerId).not.toBe(foreign.container_id);
    expect(readyContainers()).toEqual([foreign]); // untouched: still ready, still running
    expect((await docker.inspectContainer(foreign.container_id)).status).toBe('running');

    const settings = settingsFor(t.file, 'runsc', { poolSize: '1' });
    const { result, ms } = await refill(settings);
    expect(result.prune.replaced).toEqual([{ id: foreign.id, runtime: 'runc' }]);
    expect(result.created.map((c) => c.outcome)).toEqual(['created']);
    await expect(docker.inspectContainer(foreign.container_id)).rejects.toSatisfy(isNotFound);
    const [fresh] = readyContainers();
    expect(runtimeOf(engine, fresh.container_id)).toBe('runsc');

    const warm = await claimEnvironment({ db, docker, tenantRuntime: 'runsc' }, { tenant: t.tenant, name: 'gv2' });
    expect(warm).toMatchObject({ mode: 'warm', containerId: fresh.container_id });
    expect(kernelSeenBy(engine, warm.containerId)).toBe(GVISOR_KERNEL);
    console.log(`refill of 1 pool container: runc ${before.ms} ms; runsc, replacing the runc one: ${ms} ms`);
  });

  it('keeper service create runs the service under runsc, confined, with its read-only root', async () => {
    const t = poolDb();
    db = t.db;
    const deps = testDeps({ db, docker, settings: settingsFor(t.file, 'runsc') });
    const s = await createService(deps, { tenant: t.tenant, name: 'web', image: WEB_IMAGE });
    expect(s.status).toBe('running');
    expect(runtimeOf(engine, s.containerId!)).toBe('runsc');
    expect(kernelSeenBy(engine, s.containerId!)).toBe(GVISOR_KERNEL);
    expect(dockerCli(engine, 'inspect', '-f', '{{.HostConfig.ReadonlyRootfs}} {{.HostConfig.CapDrop}}', s.containerId!)).toBe('true [ALL]');
  });

  it('keeper pool refill --once starts on this engine with the default runtime and fills the pool under runsc', async () => {
    const t = poolDb();
    db = t.db;
    const flags = [
      '--db',
      t.file,
      '--host-id',
      uniqueId('gv-'),
      '--temporal-address',
      inject('devServerAddress'),
      '--pooled-templates',
      'default',
      '--pool-size',
      '1',
      '--disk-warn',
      '99',
      '--disk-block',
      '100',
    ];
    const r = await keeper(['pool', 'refill', '--once', '--json', ...flags], {
      DOCKER_HOST: engine.dockerHost,
      KEEPER_TENANT_RUNTIME: undefined,
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [row] = readyContainers();
    expect(runtimeOf(engine, row.container_id)).toBe('runsc');
  });
});
