/**
 * `npm run bench:cluster`: the same keeper host on the CLI's dev server and on a real cluster (temporal-server
 * 1.29.1 on PostgreSQL with SQL visibility, mTLS frontend, started here as the tests start it), in one run:
 * - tick wall time: a reconcile tick run as a workflow over N running services, median and p95;
 * - crash → committed in SQLite with the event watcher (see crash-latency.ts), median and p95.
 *
 *   usage: DOCKER_HOST=$(bash scripts/extra-dockerd.sh start bench) npm run bench:cluster [-- --services 10 --ticks 15 --kills 10 --first dev|cluster]
 */
import os from 'node:os';
import { ids, taskQueueFor } from '../src/ids';
import { reconcileTick } from '../src/workflows/reconcileTick';
import { startCluster } from '../test/helpers/cluster';
import { temporalTlsEnv } from '../test/helpers/cluster/keeper';
import { EngineFixture, uniqueId } from '../test/helpers/fixtures';
import { addService, addTenant, runServiceContainer } from '../test/reconcile/rows';
import { measureCrashLatency, waitUntil, type Mode } from './crash-latency';
import { arg, quantile, requireExplicitEngine, startBenchHost, type BenchHost } from './host';

requireExplicitEngine('DOCKER_HOST=$(bash scripts/extra-dockerd.sh start bench) npm run bench:cluster');

interface Figures {
  server: string;
  tickMs: number[];
  crash: Mode;
}

async function tickTimes(host: BenchHost, engine: EngineFixture, services: number, ticks: number): Promise<number[]> {
  const tenant = addTenant(host.db);
  for (let i = 0; i < services; i++) {
    const sid = uniqueId('svc');
    addService(host.db, tenant, { containerId: await runServiceContainer(engine, tenant, sid) }, sid);
  }
  const times: number[] = [];
  for (let i = 0; i <= ticks; i++) {
    const t0 = performance.now();
    await host.client.workflow.execute(reconcileTick, {
      taskQueue: taskQueueFor(host.settings.hostId),
      workflowId: uniqueId(`${ids.schedule(host.settings.hostId, 'reconcile')}-bench-`),
    });
    if (i > 0) times.push(performance.now() - t0); // the first tick makes keeper's first look: not steady state
  }
  return times;
}

async function measureOn(
  server: string,
  temporalEnv: Record<string, string> | undefined,
  o: { services: number; ticks: number; kills: number },
): Promise<Figures> {
  // The schedule's tick is pushed out of the way: ticks here are the bench's own, or the watcher's.
  const host = await startBenchHost({ reconcileInterval: '1h' }, undefined, temporalEnv);
  const engine = new EngineFixture();
  const crash: Mode = { name: 'events', kills: o.kills, latenciesMs: [] };
  try {
    const tickMs = await tickTimes(host, engine, o.services, o.ticks);
    const watcher = host.startWatcher();
    await waitUntil(() => watcher.stats.connects > 0, 10_000, 'the watcher to follow');
    await measureCrashLatency(host, engine, crash, 10_000);
    return { server, tickMs, crash };
  } finally {
    await engine.cleanup();
    await host.stop();
  }
}

const ms = (x: number) => `${Math.round(x)} ms`;
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);

function table(all: Figures[], services: number): string {
  const rows = all.map((f) => {
    const t = sorted(f.tickMs);
    const c = sorted(f.crash.latenciesMs);
    return `| ${f.server} | ${t.length} | ${ms(quantile(t, 0.5))} | ${ms(quantile(t, 0.95))} | ${c.length} | ${ms(quantile(c, 0.5))} | ${ms(quantile(c, 0.95))} |`;
  });
  const [dev, cluster] = all.map((f) => ({ tick: quantile(sorted(f.tickMs), 0.5), crash: quantile(sorted(f.crash.latenciesMs), 0.5) }));
  return [
    `reconcile tick over ${services} running services, and crash → committed with events (load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores)`,
    '',
    '| server | ticks | tick median | tick p95 | kills | crash→commit median | crash→commit p95 |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
    `| ratio cluster / dev server (medians) | | ${(cluster.tick / dev.tick).toFixed(2)}× | | | ${(cluster.crash / dev.crash).toFixed(2)}× | |`,
  ].join('\n');
}

async function main(): Promise<void> {
  const o = { services: Number(arg('services', '10')), ticks: Number(arg('ticks', '15')), kills: Number(arg('kills', '10')) };
  // Which server goes first (--first cluster) shows whether the order, not the server, makes a difference.
  const clusterFirst = arg('first', 'dev') === 'cluster';
  const cluster = await startCluster();
  try {
    const onDev = () => measureOn('CLI dev server (in memory, plaintext)', undefined, o);
    const onCluster = () => measureOn('temporal-server 1.29.1, PostgreSQL, mTLS', temporalTlsEnv(cluster), o);
    const all = clusterFirst ? [await onCluster(), await onDev()].reverse() : [await onDev(), await onCluster()];
    process.stdout.write(table(all, o.services) + `\n(measured ${clusterFirst ? 'cluster' : 'dev server'} first)\n`);
  } finally {
    await cluster.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`bench:cluster failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
