/**
 * Claim latency, warm vs cold: `npm run bench:pool` (DOCKER_HOST picks the engine).
 *
 * A fresh state DB whose templates run KEEPER_BENCH_IMAGE (default keeper-test/busybox:latest). Warm and cold
 * claims of the same template alternate, N of each (after one untimed round): a warm claim finds one ready
 * pool container (made before it, not timed), a cold one finds the pool empty. Each claim is timed end to end
 * (SQL + engine calls, as `keeper pool claim` runs it, minus the refill trigger) and removed after. Prints
 * median, p95 and the ratio; no assertion, no threshold.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { claimEnvironment, type ClaimResult } from '../src/host/pool/claim';
import { testDeps } from '../test/helpers/fixtures';
import { createPoolActivities } from '../src/activities/pool';
import { openStateDb } from '../src/db/open';
import { DockerClient } from '../src/docker/client';
import { loadSettings } from '../src/settings';

const N = Number(process.env.KEEPER_BENCH_CLAIMS ?? 20);
const IMAGE = process.env.KEEPER_BENCH_IMAGE ?? 'keeper-test/busybox:latest';

/** The real client, with each engine call a claim makes timed (wall clock, per call). */
const TIMED_OPS = [
  'listNetworks',
  'connectNetwork',
  'disconnectNetwork',
  'renameContainer',
  'createVolume',
  'createContainer',
  'startContainer',
] as const;
class TimedDocker extends DockerClient {
  readonly spent = new Map<string, number>();
}
for (const op of TIMED_OPS) {
  const original = (DockerClient.prototype as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[op];
  (TimedDocker.prototype as unknown as Record<string, unknown>)[op] = async function (this: TimedDocker, ...args: unknown[]) {
    const t0 = process.hrtime.bigint();
    try {
      return await original.apply(this, args);
    } finally {
      this.spent.set(op, (this.spent.get(op) ?? 0) + Number(process.hrtime.bigint() - t0) / 1e6);
    }
  };
}

function quantile(sorted: number[], q: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keeper-bench-pool-'));
  const file = path.join(dir, 'state.db');
  const db = openStateDb(file);
  const docker = new TimedDocker();
  const tenant = `bench${process.pid}`;
  db.prepare('UPDATE environment_templates SET base_image = ?').run(IMAGE);
  db.prepare(`INSERT INTO tenants (id, name, email, created_at, updated_at) VALUES (?, ?, ?, 1, 1)`).run(tenant, tenant, `${tenant}@bench`);
  // README's figures were measured under runc; KEEPER_TENANT_RUNTIME=runsc measures gVisor on an engine that has it.
  const tenantRuntime = process.env.KEEPER_TENANT_RUNTIME ?? 'runc';
  const settings = loadSettings(
    { db: file, hostId: 'bench', poolSize: '1', poolMaxTotal: '1', pooledTemplates: 'default', tenantRuntime },
    {},
  );
  const acts = createPoolActivities(testDeps({ db, docker, settings }));
  const results: ClaimResult[] = [];
  const timings: Record<'warm' | 'cold', number[]> = { warm: [], cold: [] };
  const calls: Record<'warm' | 'cold', number> = { warm: 0, cold: 0 };
  const opTimes: Record<'warm' | 'cold', Map<string, number[]>> = { warm: new Map(), cold: new Map() };
  const remove = async (r: ClaimResult) => {
    await docker.removeContainer(r.containerId, { force: true });
    await docker.removeVolume(r.volume);
  };
  try {
    // Warm and cold claims alternate, each on an engine in the same state: one ready pool container (made
    // before the timed claim, not timed) and no other environment (each is removed after it is timed).
    for (let i = -1; i < N; i++) {
      for (const mode of ['warm', 'cold'] as const) {
        if (mode === 'warm') await acts.createPoolEntry({ entryId: `wp_bench${process.pid}_${i + 1}`, templateId: 'tmpl_default' });
        docker.resetCalls();
        docker.spent.clear();
        const t0 = process.hrtime.bigint();
        const r = await claimEnvironment({ db, docker, tenantRuntime }, { tenant, name: `${mode}${i + 1}` });
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        const engineCalls = docker.totalCalls;
        const spent = new Map(docker.spent);
        results.push(r);
        if (r.mode !== mode) throw new Error(`expected a ${mode} claim, got ${r.mode}${r.fallbackReason ? ` (${r.fallbackReason})` : ''}`);
        await remove(r);
        if (i < 0) continue; // the first round only warms both paths up
        timings[mode].push(ms);
        calls[mode] += engineCalls;
        for (const [op, msOp] of spent) opTimes[mode].set(op, [...(opTimes[mode].get(op) ?? []), msOp]);
      }
    }
  } finally {
    for (const r of results) await docker.removeContainer(r.containerId, { force: true }).catch(() => undefined);
    for (const c of await docker.listContainers({ 'ah.type': 'warm-pool' }))
      await docker.removeContainer(c.id, { force: true }).catch(() => undefined);
    for (const r of results) await docker.removeVolume(r.volume).catch(() => undefined);
    for (const v of await docker.listVolumes(`ah-pool-wp_bench${process.pid}_`)) await docker.removeVolume(v.name).catch(() => undefined);
    await docker.removeNetwork(`ah-tenant-${tenant}`).catch(() => undefined);
    await docker.removeNetwork('ah-pool').catch(() => undefined);
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }

  const info = await docker.info();
  const rows = (['warm', 'cold'] as const).map((mode) => {
    const xs = [...timings[mode]].sort((a, b) => a - b);
    return { mode, n: xs.length, median: quantile(xs, 0.5), p95: quantile(xs, 0.95), calls: xs.length ? calls[mode] / xs.length : 0 };
  });
  const [warm, cold] = rows;
  console.log(`claim latency, warm vs cold (${IMAGE}, Docker ${info.serverVersion}, ${os.cpus().length} CPUs, node ${process.version})`);
  console.log('');
  console.log('| claim | n | median ms | p95 ms | engine calls/claim |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.mode} | ${r.n} | ${r.median.toFixed(1)} | ${r.p95.toFixed(1)} | ${r.calls.toFixed(1)} |`);
  console.log('');
  console.log('median ms per engine call, by claim kind:');
  for (const mode of ['warm', 'cold'] as const) {
    const parts = [...opTimes[mode]].map(
      ([op, xs]) =>
        `${op} ${quantile(
          [...xs].sort((a, b) => a - b),
          0.5,
        ).toFixed(0)}`,
    );
    console.log(`  ${mode}: ${parts.join(', ')}`);
  }
  console.log('');
  console.log(`cold/warm ratio: median ${(cold.median / warm.median).toFixed(1)}x, p95 ${(cold.p95 / warm.p95).toFixed(1)}x`);
}

main().catch((err) => {
  console.error(`bench:pool: ${(err as Error).message}`);
  process.exit(1);
});
