/**
 * `npm run bench:gc`: engine calls and wall time of one GC sweep over M resources (M = 20, 100, 400; half
 * volumes, half stopped containers), on a real engine and a real SQLite file. The sweep runs every class of the
 * registry in the workflow's order (containers, then the other classes side by side) without Temporal, so
 * the figures are the engine's and the DB's, not the server's.
 *
 * Three sweeps per round: "kept" (every resource referenced by a DB row: nothing to do), "dry run" (all
 * orphans, plan only) and "real" (all orphans removed). Figures are medians over the rounds.
 *
 * A sweep removes every old, unreferenced ah resource of the engine, so this refuses to run unless
 * DOCKER_HOST names an engine explicitly (use an isolated one: scripts/extra-dockerd.sh start bench).
 *   usage: DOCKER_HOST=unix:///run/keeper-dockerd-gc/docker.sock npm run bench:gc [-- --rounds 3 --sizes 20,100,400]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { GcClassResult } from '../src/contracts/gc';
import { sweepOnHost } from '../src/host/gc/registry';
import { testDeps } from '../test/helpers/fixtures';
import { openStateDb, type StateDb } from '../src/db/open';
import { DockerClient } from '../src/docker/client';
import type { Logger } from '../src/log';
import { loadSettings } from '../src/settings';

const IMAGE = 'keeper-test/busybox:latest';
const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

interface Sample {
  wallMs: number;
  calls: Map<string, number>;
  removed: number;
  planned: number;
}

async function sweep(docker: DockerClient, db: StateDb, dir: string, dryRun: boolean): Promise<Sample> {
  const settings = loadSettings(
    { db: path.join(dir, 'state.db'), hostId: 'bench', gcMinAge: '0s', buildDir: path.join(dir, 'builds') },
    {},
  );
  const deps = testDeps({ db, docker, settings, log: silent });
  docker.resetCalls();
  const t0 = performance.now();
  const all: GcClassResult[] = await sweepOnHost(deps, dryRun);
  const wallMs = performance.now() - t0;
  const errors = all.filter((c) => c.error || c.failed.length > 0);
  if (errors.length > 0) throw new Error(`sweep had errors: ${JSON.stringify(errors.map((c) => [c.class, c.error, c.failed]))}`);
  return {
    wallMs,
    calls: new Map(docker.calls),
    removed: all.reduce((n, c) => n + c.removed.length, 0),
    planned: all.reduce((n, c) => n + c.planned.length, 0),
  };
}

async function createWorld(docker: DockerClient, m: number, tag: string): Promise<{ containers: string[]; volumes: string[] }> {
  const containers: string[] = [];
  const volumes: string[] = [];
  const half = Math.floor(m / 2);
  await inBatches(half, 8, async (i) => {
    volumes[i] = `ah-env-bench-${tag}-${i}`;
    await docker.createVolume(volumes[i]);
  });
  await inBatches(m - half, 8, async (i) => {
    containers[i] = await docker.createContainer({
      name: `ah-bench-${tag}-${i}`,
      image: IMAGE,
      cmd: ['true'],
      labels: { 'ah.type': 'environment' },
      network: 'none',
    });
  });
  return { containers, volumes };
}

async function inBatches(n: number, width: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, n) }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const sumWhere = (calls: Map<string, number>, test: (op: string) => boolean) =>
  [...calls].filter(([op]) => test(op)).reduce((n, [, v]) => n + v, 0);

async function main(): Promise<void> {
  if (!process.env.DOCKER_HOST) {
    console.error('bench:gc: set DOCKER_HOST to an isolated engine (a sweep removes every unreferenced ah resource on it)');
    process.exit(2);
  }
  const sizes = arg('sizes', '20,100,400').split(',').map(Number);
  const rounds = Number(arg('rounds', '3'));
  const docker = new DockerClient();
  const info = await docker.info();
  console.error(`engine ${process.env.DOCKER_HOST} (Docker ${info.serverVersion}), ${os.cpus().length} CPUs, rounds ${rounds}`);

  const rows: string[][] = [];
  for (const m of sizes) {
    const samples: Record<'kept' | 'dry run' | 'real', Sample[]> = { kept: [], 'dry run': [], real: [] };
    for (let round = 0; round < rounds; round++) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keeper-bench-gc-'));
      const db = openStateDb(path.join(dir, 'state.db'));
      const world = await createWorld(docker, m, `${m}-${round}-${process.pid}`);
      // every resource referenced: the sweep must find nothing to do
      db.exec(`INSERT INTO tenants (id, name, email, created_at, updated_at) VALUES ('tb', 'b', 'b@x', 0, 0)`);
      const ins = db.prepare(
        `INSERT INTO environments (id, tenant_id, name, container_id, volume_name, created_at, updated_at) VALUES (?, 'tb', ?, ?, ?, 0, 0)`,
      );
      db.transaction(() => {
        for (let i = 0; i < Math.max(world.containers.length, world.volumes.length); i++)
          ins.run(`e${i}`, `e${i}`, world.containers[i] ?? '', world.volumes[i] ?? '');
      })();
      samples.kept.push(await sweep(docker, db, dir, false));
      db.exec('DELETE FROM environments');
      samples['dry run'].push(await sweep(docker, db, dir, true));
      const real = await sweep(docker, db, dir, false);
      if (real.removed < m) throw new Error(`expected ${m} removals, got ${real.removed}`);
      samples.real.push(real);
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
    for (const [mode, ss] of Object.entries(samples)) {
      const med = (f: (s: Sample) => number) => median(ss.map(f));
      rows.push([
        String(m),
        mode,
        String(med((s) => (mode === 'dry run' ? s.planned : s.removed))),
        String(med((s) => sumWhere(s.calls, (op) => op.endsWith('.list')))),
        String(med((s) => sumWhere(s.calls, (op) => op.endsWith('.inspect')))),
        String(med((s) => sumWhere(s.calls, (op) => /\.(remove|stop|disconnect)$/.test(op)))),
        String(med((s) => sumWhere(s.calls, () => true))),
        med((s) => s.wallMs).toFixed(0),
      ]);
    }
  }
  const header = ['M', 'sweep', 'removed / planned', 'list calls', 'inspect calls', 'removal calls', 'engine calls', 'wall ms (median)'];
  console.log(`| ${header.join(' | ')} |`);
  console.log(`|${header.map(() => '---').join('|')}|`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}

main().catch((err) => {
  console.error(`bench:gc: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
