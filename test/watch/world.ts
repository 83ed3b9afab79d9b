/**
 * A host as an operator runs it, for the local looks' tests: `keeper worker` (the built bin, in a child process) at
 * the default settings unless a test says otherwise, on the suite's dev server, reaching an engine of the file's own
 * through a fault proxy (test/helpers/docker-proxy.ts) that can hold Docker's event stream open and silent. Its
 * state DB is a real SQLite file the test also reads and writes, as ah would.
 */
import { Client, Connection } from '@temporalio/client';
import { inject } from 'vitest';
import type { StateDb } from '../../src/db/open';
import { freePort } from '../../src/temporal/dev-server';
import { deleteSchedule, terminateWorkflow } from '../../src/temporal/footprint';
import { loopFootprint } from '../../src/loops/schedules';
import { startKeeper } from '../helpers/cli';
import { DockerProxy } from '../helpers/docker-proxy';
import { extraEngine, stopEngine, type ExtraEngine } from '../helpers/engines';
import { lastLoopResult } from '../../src/db/loop-results';
import { EngineFixture, freshDb, uniqueId, waitFor } from '../helpers/fixtures';
import { addService, runServiceContainer } from '../reconcile/rows';

export interface WatchedHost {
  hostId: string;
  db: StateDb;
  file: string;
  engine: ExtraEngine;
  /** Containers the test makes, on the file's engine directly (not through the proxy). */
  fixture: EngineFixture;
  proxy: DockerProxy;
  client: Client;
  worker: ReturnType<typeof startKeeper>;
  /** The worker's metrics endpoint, when the test asked for one (`metrics`). */
  metricsUrl: string;
  /** Stops the worker and removes what the host made; KEEPER_TEST_SHOW_WORKER=1 prints the worker's output first. */
  stop(): Promise<void>;
}

/**
 * Starts engine `name` of this run, a proxy in front of it and a worker for a fresh host. `env`: the worker's
 * settings as KEEPER_* variables, over the defaults (by default no pooled templates: a test of the pool names them).
 */
export async function watchedHost(
  name: string,
  env: Record<string, string> = {},
  opts: { prepare?: (db: StateDb) => void; temporalAddress?: string; metrics?: boolean } = {},
): Promise<WatchedHost> {
  const engine = extraEngine(name);
  process.env.DOCKER_HOST = engine.dockerHost;
  const fixture = new EngineFixture();
  const proxy = await DockerProxy.start();
  const { db, file } = freshDb();
  opts.prepare?.(db);
  const hostId = uniqueId(`${name}-`);
  const address = opts.temporalAddress ?? inject('devServerAddress');
  const connection = await Connection.connect({ address });
  const client = new Client({ connection });
  const metricsPort = opts.metrics ? await freePort() : 0;
  const metricsUrl = opts.metrics ? `http://127.0.0.1:${metricsPort}/metrics` : '';
  const worker = startKeeper(['worker', '--db', file, '--host-id', hostId, '--metrics-port', String(metricsPort), '--log-format', 'json'], {
    TEMPORAL_ADDRESS: address,
    DOCKER_HOST: proxy.dockerHost,
    KEEPER_POOLED_TEMPLATES: '',
    ...env,
  });
  const stop = async () => {
    if (process.env.KEEPER_TEST_SHOW_WORKER) console.log(worker.output);
    worker.child.kill('SIGTERM');
    await Promise.race([worker.exited, new Promise((r) => setTimeout(r, 20_000))]);
    if (worker.child.exitCode === null) worker.child.kill('SIGKILL');
    // A server of the test's own goes with its test; the suite's keeps nothing of this host.
    if (!opts.temporalAddress) {
      const f = await loopFootprint(client, hostId);
      for (const s of f.schedules) await deleteSchedule(client, s.scheduleId);
      for (const w of f.running) await terminateWorkflow(client, w.workflowId, 'test cleanup');
    }
    await connection.close();
    db.close();
    await proxy.close();
    await fixture.cleanup();
    stopEngine(engine);
  };
  try {
    await worker.waitForOutput(/keeper is running/, 120_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return { hostId, db, file, engine, fixture, proxy, client, worker, metricsUrl, stop };
}

/** The event watcher's state as the worker records it (what `keeper status` shows). */
export function watcherState(db: StateDb, hostId: string): string | undefined {
  const r = db.prepare('SELECT state FROM keeper_event_watcher WHERE host_id = ?').get(hostId) as { state: string } | undefined;
  return r?.state;
}

/**
 * A running service of `tenant` that keeper has a snapshot of (its baseline), once the tick the event watcher requests
 * 11 s after a container starts has run: from then on, only what the test does requests anything.
 */
export async function lookedAtService(
  h: WatchedHost,
  tenant: string,
  boundMs: number,
  spec: Parameters<typeof runServiceContainer>[3] = {},
): Promise<{ sid: string; cid: string }> {
  const sid = `svc-${Math.random().toString(36).slice(2, 8)}`;
  const cid = await runServiceContainer(h.fixture, tenant, sid, spec);
  addService(h.db, tenant, { containerId: cid }, sid);
  const looked = () => h.db.prepare('SELECT 1 FROM keeper_container_snapshots WHERE service_id = ?').get(sid);
  await waitFor("keeper's first snapshot of the new service", looked, boundMs, 250);
  const startedAtSec = Math.floor((await h.fixture.docker.inspectContainer(cid)).startedAtMs! / 1000);
  const startRequestRan = () => (lastLoopResult(h.db, 'reconcile')?.finishedAt ?? 0) >= startedAtSec + 11;
  await waitFor('the tick the start requested', startRequestRan, boundMs, 250);
  return { sid, cid };
}
