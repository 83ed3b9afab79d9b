/**
 * What the worker's local looks cost the host they watch: engine API calls and CPU (keeper's, and the engine's own)
 * per look, and per minute at their default intervals, with S running services and a full warm pool; no Temporal
 * call is involved. Beside them, what ah's own loops ask of the engine for the same host (docs/ah-differences.md W-1).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStateDb, type StateDb } from '../src/db/open';
import { DockerClient } from '../src/docker/client';
import type { HostDeps } from '../src/host/deps';
import { lookForGc } from '../src/host/looks/gc-look';
import { lookForPool } from '../src/host/looks/pool-look';
import { lookForReconcile } from '../src/host/looks/reconcile-look';
import { createPoolEntry } from '../src/host/pool/refill';
import type { LoopName } from '../src/ids';
import { silentLogger } from '../src/log';
import { loadSettings } from '../src/settings';
import { testDeps } from '../test/helpers/fixtures';
import { addTenant } from '../test/reconcile/rows';
import { inBatches, runServices } from './services';

const IMAGE = 'keeper-test/busybox:latest';

export interface LookCost {
  loop: LoopName;
  callsPerLook: number;
  keeperCpuMsPerLook: number;
  engineCpuMsPerLook: number;
  everyMs: number;
}

/** dockerd's CPU time (ms) from /proc, when the engine is one of scripts/extra-dockerd.sh's (its pid file is known). */
export function engineCpuMs(dockerHost = process.env.DOCKER_HOST ?? ''): number | undefined {
  const run = /^unix:\/\/(\/run\/keeper-dockerd-[^/]+)\/docker\.sock$/.exec(dockerHost)?.[1];
  if (!run) return undefined;
  try {
    const pid = fs.readFileSync(path.join(run, 'docker.pid'), 'utf8').trim();
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / Number(process.env.CLK_TCK ?? 100);
  } catch {
    return undefined;
  }
}

/** A host with `services` running service containers and a full pool of `poolSize` (template default, busybox). */
async function hostWith(
  services: number,
  poolSize: number,
  docker: DockerClient,
): Promise<{ deps: HostDeps; db: StateDb; dir: string; containers: string[] }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keeper-bench-looks-'));
  const db = openStateDb(path.join(dir, 'state.db'));
  db.prepare('UPDATE environment_templates SET base_image = ?').run(IMAGE);
  const settings = loadSettings(
    {
      db: path.join(dir, 'state.db'),
      hostId: 'bench-looks',
      pooledTemplates: 'default',
      poolSize: String(poolSize),
      tenantRuntime: 'runc',
      gcMinAge: '10m',
    },
    {},
  );
  const deps = testDeps({ db, docker, settings, log: silentLogger });
  const tenant = addTenant(db);
  const containers = await runServices(
    docker,
    db,
    tenant,
    'look',
    Array.from({ length: services }, (_, i) => i),
  );
  for (let i = 0; i < poolSize; i++) {
    const made = await createPoolEntry(deps, { entryId: `wp_bench_${i}`, templateId: 'tmpl_default' });
    if (made.containerId) containers.push(made.containerId);
  }
  return { deps, db, dir, containers };
}

/** Each loop's look, `samples` times after one warm-up look (the reconcile look's first one sets its baselines). */
export async function measureLookCosts(services: number, samples: number): Promise<LookCost[]> {
  const docker = new DockerClient();
  const h = await hostWith(services, 2, docker);
  const s = h.deps.settings;
  const looks: [LoopName, number, () => Promise<unknown>][] = [
    ['reconcile', s.reconcileLookIntervalMs, () => lookForReconcile(h.deps)],
    ['pool', s.poolLookIntervalMs, () => lookForPool(h.deps)],
    ['gc', s.gcLookIntervalMs, () => lookForGc(h.deps)],
  ];
  const out: LookCost[] = [];
  try {
    // A look inspects only containers whose list entry cannot prove them unchanged: those started within about a
    // look's interval. The host is measured in its steady state, once every container has run longer than that.
    await new Promise((r) => setTimeout(r, 15_000));
    for (const [loop, everyMs, look] of looks) {
      await look();
      docker.resetCalls();
      const cpu0 = process.cpuUsage();
      const engine0 = engineCpuMs();
      for (let i = 0; i < samples; i++) await look();
      const cpu = process.cpuUsage(cpu0);
      const engine1 = engineCpuMs();
      out.push({
        loop,
        everyMs,
        callsPerLook: docker.totalCalls / samples,
        keeperCpuMsPerLook: (cpu.user + cpu.system) / 1000 / samples,
        engineCpuMsPerLook: engine0 === undefined || engine1 === undefined ? NaN : (engine1 - engine0) / samples,
      });
    }
  } finally {
    await inBatches(
      h.containers.map((_, i) => i),
      8,
      (i) => docker.removeContainer(h.containers[i], { force: true }).catch(() => undefined),
    );
    for (const v of await docker.listVolumes('ah-pool-')) await docker.removeVolume(v.name).catch(() => undefined);
    await docker.removeNetwork('ah-pool').catch(() => undefined);
    h.db.close();
    fs.rmSync(h.dir, { recursive: true, force: true });
  }
  return out;
}

/**
 * ah's loops against the same host, in engine calls a minute, from its code: the reconciler's 2 + 3·S + D + E
 * every 30 s (W-1), the pool's prune inspects of its P ready containers every 60 s, and GC's five container lists,
 * an inspect of each ah container, four volume lists, a network list and an image prune every 5 min.
 */
export function ahCallsPerMinute(services: number, pool: number): Record<LoopName, number> {
  return {
    reconcile: (2 + 3 * services) * 2,
    pool: 1 + pool,
    gc: (5 + services + pool + 4 + 1 + 1) / 5,
  };
}
