/**
 * Reconcile tick cost by number of services: `npm run bench:reconcile` (DOCKER_HOST picks the engine).
 * For N = 10, 50, 200 real services and containers it runs, on an in-memory CLI dev server with an in-process
 * worker: a first tick (keeper's first look at every container), steady ticks (nothing changed), and a tick
 * after 5 containers were killed and restarted by Docker. Per tick it prints the Docker API calls (lists,
 * inspects, all), the tick's wall time (start to result) and its history events. Medians over the steady ticks.
 * Usage: tsx bench/reconcile.ts [N ...]   (default 10 50 200)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { openStateDb } from '../src/db/open';
import { loadSettings } from '../src/settings';
import { taskQueueFor } from '../src/ids';
import { startDevServer } from '../src/temporal/dev-server';
import { createKeeperHost } from '../src/app/keeper-host';
import { silentLogger } from '../src/log';
import { reconcileTick } from '../src/workflows/reconcileTick';
import { TestDockerClient } from '../test/helpers/test-docker';
import { inBatches, runServices } from './services';

const STEADY_TICKS = 7;

interface TickCost {
  lists: number;
  inspects: number;
  calls: number;
  ms: number;
  events: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const sizes = process.argv
    .slice(2)
    .map(Number)
    .filter((n) => n > 0);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const server = await startDevServer();
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });
  const native = await NativeConnection.connect({ address: server.address });
  const rows: string[][] = [];
  try {
    for (const n of sizes.length ? sizes : [10, 50, 200]) rows.push(...(await benchOne(n, client, native)));
  } finally {
    await native.close();
    await connection.close();
    await server.stop();
  }
  const header = ['N', 'tick', 'list calls', 'inspects', 'Docker calls', 'wall ms', 'history events'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  console.log([line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n'));
  console.log(
    `\nengine ${process.env.DOCKER_HOST ?? 'default socket'}; ${os.cpus().length} CPUs; node ${process.version}; steady = median of ${STEADY_TICKS} ticks`,
  );
}

async function benchOne(n: number, client: Client, native: NativeConnection): Promise<string[][]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keeper-bench-'));
  const db = openStateDb(path.join(dir, 'state.db'));
  const docker = new TestDockerClient();
  const hostId = `bench-${n}-${process.pid}`;
  const settings = loadSettings({ hostId, db: path.join(dir, 'state.db') }, {});
  const tenant = `tbench${n}`;
  db.prepare(`INSERT INTO tenants (id, name, email, created_at, updated_at) VALUES (?, ?, ?, 1, 1)`).run(tenant, tenant, `${tenant}@bench`);
  const containers: string[] = [];
  try {
    await runServices(docker, db, tenant, `${n}x${process.pid}`, [...Array(n).keys()], containers);
    const worker = await createKeeperHost(settings, { db, docker, log: silentLogger }).createWorker({
      connection: native,
      namespace: 'default',
      shutdownGraceTime: '1s',
    });
    let seq = 0;
    const tick = async (): Promise<TickCost> => {
      docker.resetCalls();
      const workflowId = `${hostId}-tick-${seq++}`;
      const t0 = performance.now();
      await client.workflow.execute(reconcileTick, { taskQueue: taskQueueFor(hostId), workflowId });
      const ms = performance.now() - t0;
      const history = await client.workflow.getHandle(workflowId).fetchHistory();
      return {
        lists: docker.calls.get('container.list') ?? 0,
        inspects: docker.calls.get('container.inspect') ?? 0,
        calls: docker.totalCalls,
        ms,
        events: history.events?.length ?? 0,
      };
    };
    return await worker.runUntil(async () => {
      const first = await tick();
      const steady: TickCost[] = [];
      for (let i = 0; i < STEADY_TICKS; i++) steady.push(await tick());
      for (const id of containers.slice(0, 5)) await docker.killContainer(id);
      const afterKills = await tick();
      const fmt = (label: string, c: TickCost) => [
        String(n),
        label,
        String(c.lists),
        String(c.inspects),
        String(c.calls),
        c.ms.toFixed(0),
        String(c.events),
      ];
      const med: TickCost = {
        lists: median(steady.map((s) => s.lists)),
        inspects: median(steady.map((s) => s.inspects)),
        calls: median(steady.map((s) => s.calls)),
        ms: median(steady.map((s) => s.ms)),
        events: median(steady.map((s) => s.events)),
      };
      return [fmt('first look', first), fmt('steady (median)', med), fmt('5 killed', afterKills)];
    });
  } finally {
    await inBatches(containers, 16, (id) => docker.removeContainer(id, { force: true }).catch(() => undefined));
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
