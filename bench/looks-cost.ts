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
import { EngineView } from '../src/watch/engine-view';
import { lookForGc } from '../src/host/gc/look';
import { lookForPool } from '../src/host/pool/look';
import { lookForReconcile } from '../src/host/reconcile/look';
import { createPoolEntry } from '../src/host/pool/refill';
import type { LoopName } from '../src/loops/registry';
import { silentLogger } from '../src/log';
import { crashPolicy } from '../src/policy/deaths/decision';
import { loadSettings } from '../src/settings';
import { testDeps } from '../test/helpers/fixtures';
import { addTenant } from '../test/reconcile/rows';
import { inBatches, runServices } from './services';

const IMAGE = 'keeper-test/busybox:latest';

export interface LookCost {
  /** A loop's look, or `view`: the one container list of a round of looks. */
  loop: LoopName | 'view';
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

/** `samples` runs of `run` on a view from `prepare`, counting only `run`'s engine calls and CPU. */
async function measure(
  loop: LookCost['loop'],
  everyMs: number,
  samples: number,
  docker: DockerClient,
  prepare: () => Promise<EngineView>,
  run: (view: EngineView) => Promise<unknown>,
): Promise<LookCost> {
  let [calls, keeperMs, engineMs] = [0, 0, 0];
  for (let i = 0; i < samples; i++) {
    const view = await prepare();
    docker.resetCalls();
    const [cpu0, engine0] = [process.cpuUsage(), engineCpuMs()];
    await run(view);
    const [cpu, engine1] = [process.cpuUsage(cpu0), engineCpuMs()];
    calls += docker.totalCalls;
    keeperMs += (cpu.user + cpu.system) / 1000;
    engineMs += engine0 === undefined || engine1 === undefined ? NaN : engine1 - engine0;
  }
  return { loop, everyMs, callsPerLook: calls / samples, keeperCpuMsPerLook: keeperMs / samples, engineCpuMsPerLook: engineMs / samples };
}

/**
 * How often a round of looks comes, on average: the looks due at the same moment share one (src/watch/look-runner.ts),
 * so a minute at 10 s, 15 s and 60 s has 8 rounds (at 10, 15, 20, 30, 40, 45, 50 and 60 s), not 11.
 */
export function meanRoundIntervalMs(intervalsMs: number[]): number {
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  const period = Math.min(
    intervalsMs.reduce((a, b) => (a * b) / gcd(a, b)),
    3_600_000,
  );
  const moments = new Set(intervalsMs.flatMap((every) => Array.from({ length: Math.floor(period / every) }, (_, i) => (i + 1) * every)));
  return period / moments.size;
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

/**
 * What the looks cost over a minute at their intervals: each loop's look given a view already listed (its own engine
 * calls only), and the view's one container list, which each round of looks makes once (src/watch/look-runner.ts).
 * Each `samples` times after one warm-up look (the reconcile look's first one sets its baselines).
 */
export async function measureLookCosts(services: number, samples: number): Promise<LookCost[]> {
  const docker = new DockerClient();
  const h = await hostWith(services, 2, docker);
  const s = h.deps.settings;
  const looks: [LoopName, number, (view: EngineView) => Promise<unknown>][] = [
    ['reconcile', s.reconcileLookIntervalMs, (view) => lookForReconcile(h.deps, crashPolicy(s), view)],
    ['pool', s.poolLookIntervalMs, (view) => lookForPool(h.deps, view)],
    ['gc', s.gcLookIntervalMs, (view) => lookForGc(h.deps, view)],
  ];
  const listed = async () => {
    const view = new EngineView(docker);
    await view.containers();
    return view;
  };
  const out: LookCost[] = [];
  try {
    // A look inspects only containers whose list entry cannot prove them unchanged: those started within about a
    // look's interval. The host is measured in its steady state, once every container has run longer than that.
    await new Promise((r) => setTimeout(r, 15_000));
    const roundEveryMs = meanRoundIntervalMs(looks.map(([, everyMs]) => everyMs));
    out.push(
      await measure(
        'view',
        roundEveryMs,
        samples,
        docker,
        async () => new EngineView(docker),
        (view) => view.containers(),
      ),
    );
    for (const [loop, everyMs, look] of looks) {
      await look(await listed());
      out.push(await measure(loop, everyMs, samples, docker, listed, look));
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
