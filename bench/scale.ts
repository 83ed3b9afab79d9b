/**
 * `npm run bench:scale`: what one reconcile tick costs as the host grows, for N = 50, 200 and 500 running
 * service containers on a real engine, a real SQLite file and a real keeper worker (schedule + event watcher,
 * as `npm start` wires them).
 *
 * Per N: one warm-up tick (keeper's first look at the new containers), then `--ticks` measured ticks with the
 * schedule paused: Docker API calls (counted by the adapter), SQLite statements executed (every statement's
 * run/get/all/iterate, counted by wrapping this DB handle's prepare — bench-only), history events and wall
 * time, medians. Then the schedule runs unpaused for `--window` at its 30 s interval, and the process's RSS
 * and CPU seconds per minute are read (the worker runs in this process; the dev server is another one and is
 * not counted). The last line is what ah's per-service inspect loop (W-1) would make: 2 + 3·S + D + E.
 *
 *   usage: DOCKER_HOST=unix:///run/keeper-dockerd-bench/docker.sock npm run bench:scale [-- --sizes 50,200,500 --ticks 3 --window 60s]
 */
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import { openStateDb, type StateDb } from '../src/db/open';
import { DockerClient } from '../src/docker/client';
import { ids, taskQueueFor } from '../src/ids';
import { parseDuration } from '../src/settings';
import { addTenant } from '../test/reconcile/rows';
import { uniqueId } from '../test/helpers/fixtures';
import { arg, requireExplicitEngine, startBenchHost, type BenchHost } from './host';
import { inBatches, runServices } from './services';

requireExplicitEngine('DOCKER_HOST=unix:///run/keeper-dockerd-bench/docker.sock npm run bench:scale');

/** Counts every statement execution on this handle: the figure is keeper's, as it goes through db.prepare. */
function countStatements(db: StateDb): { count: number } {
  const counter = { count: 0 };
  const prepare = db.prepare.bind(db);
  db.prepare = ((sql: string) => {
    const stmt = prepare(sql) as unknown as Record<string, (...a: unknown[]) => unknown>;
    for (const m of ['run', 'get', 'all', 'iterate']) {
      const f = stmt[m].bind(stmt);
      stmt[m] = (...a: unknown[]) => (counter.count++, f(...a));
    }
    return stmt;
  }) as unknown as StateDb['prepare'];
  return counter;
}

interface TickCost {
  dockerCalls: number;
  statements: number;
  historyEvents: number;
  wallMs: number;
}

async function measureTick(host: BenchHost, statements: { count: number }): Promise<TickCost> {
  host.docker.resetCalls();
  const before = statements.count;
  const t0 = performance.now();
  const workflowId = uniqueId(`keeper-${host.settings.hostId}-reconcile-bench-`);
  await host.client.workflow.execute('reconcileTick', { taskQueue: taskQueueFor(host.settings.hostId), workflowId, args: [] });
  const wallMs = performance.now() - t0;
  const history = await host.client.workflow.getHandle(workflowId).fetchHistory();
  return { dockerCalls: host.docker.totalCalls, statements: statements.count - before, historyEvents: history.events?.length ?? 0, wallMs };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

async function main(): Promise<void> {
  const sizes = arg('sizes', '50,200,500').split(',').map(Number);
  const ticks = Number(arg('ticks', '3'));
  const windowMs = parseDuration(arg('window', '60s'));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keeper-bench-scale-'));
  const db = openStateDb(path.join(dir, 'state.db'));
  const statements = countStatements(db);
  const host = await startBenchHost({ db: path.join(dir, 'state.db') }, db);
  host.startWatcher();
  const docker = new DockerClient();
  const schedule = host.client.schedule.getHandle(ids.schedule(host.settings.hostId, 'reconcile'));
  const tenant = addTenant(db);
  const created: string[] = [];
  const rows: string[] = [];
  try {
    for (const n of sizes) {
      const t0 = performance.now();
      const indexes = Array.from({ length: n - created.length }, (_, k) => created.length + k);
      created.push(...(await runServices(docker, db, tenant, 'bench', indexes)));
      process.stderr.write(`N=${n}: containers ready in ${Math.round((performance.now() - t0) / 1000)} s\n`);
      await schedule.pause('bench: measured ticks');
      await measureTick(host, statements); // the first look at the new containers
      const costs: TickCost[] = [];
      for (let k = 0; k < ticks; k++) costs.push(await measureTick(host, statements));
      await schedule.unpause('bench: steady state');
      const cpu0 = process.cpuUsage();
      const w0 = performance.now();
      await new Promise((r) => setTimeout(r, windowMs));
      const cpu = process.cpuUsage(cpu0);
      const minutes = (performance.now() - w0) / 60_000;
      rows.push(
        `| ${n} | ${median(costs.map((c) => c.dockerCalls))} | ${median(costs.map((c) => c.statements))} | ` +
          `${median(costs.map((c) => c.historyEvents))} | ${Math.round(median(costs.map((c) => c.wallMs)))} ms | ` +
          `${Math.round(process.memoryUsage().rss / 2 ** 20)} MB | ${((cpu.user + cpu.system) / 1e6 / minutes).toFixed(2)} | ` +
          `${2 + 3 * n} |`,
      );
      process.stderr.write(`${rows.at(-1)}\n`);
    }
  } finally {
    await host.stop();
    await inBatches(
      created.map((_, i) => i),
      8,
      (i) => docker.removeContainer(created[i], { force: true }).catch(() => undefined),
    );
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const lines = [
    `one reconcile tick with N running service containers (medians of ${ticks} ticks; RSS and CPU over ${arg('window', '60s')} ` +
      `at the ${host.settings.reconcileIntervalMs / 1000} s interval, watcher on; load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores)`,
    '',
    '| N | Docker API calls | SQLite statements | history events | wall time | worker RSS | CPU s/min | ah per-service loop (W-1): 2 + 3·S + D + E |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
  ];
  process.stdout.write(lines.join('\n') + '\n');
}

main().catch((err) => {
  process.stderr.write(`bench:scale failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
