/**
 * How long each path takes that Docker's event stream does not cover, at the default settings: a keeper worker
 * wired as `keeper worker` wires it (schedules, event watcher, disk watcher, local looks), in this process, on a dev
 * server of its own, reaching the engine through a fault proxy that can hold the event stream open and silent.
 * Each path is timed from the moment the change can be known to the moment keeper has done it.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { createKeeperHost, type HostWatch } from '../src/app/keeper-host';
import { openStateDb, type StateDb } from '../src/db/open';
import { DockerClient } from '../src/docker/client';
import { silentLogger } from '../src/log';
import { loadSettings, type Settings } from '../src/settings';
import { connectClient, resolveTemporalTarget } from '../src/temporal/connection';
import { freePort, startDevServer, type DevServer } from '../src/temporal/dev-server';
import { connectNative } from '../src/temporal/native';
import { installRuntime } from '../src/temporal/runtime';
import { crashContainer } from '../test/helpers/crash';
import { DockerProxy } from '../test/helpers/docker-proxy';
import { waitFor } from '../test/helpers/fixtures';
import { addService, addTenant, service } from '../test/reconcile/rows';

const IMAGE = 'keeper-test/busybox:latest';
export const PATH_GRACE_SEC = 20;
export const PATH_GC_MIN_AGE_SEC = 30;

export interface PathHost {
  settings: Settings;
  db: StateDb;
  docker: DockerClient;
  proxy: DockerProxy;
  tenant: string;
  watch: HostWatch;
  /** Kills the dev server and starts it again on the same file and port; resolves once it answers. */
  restartServerAfter(whileDown: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

/** A worker at the default settings but for a shorter engine-stop grace and GC age guard (what is timed is the lateness after them). */
export async function startPathHost(): Promise<PathHost> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keeper-bench-paths-'));
  const settings = loadSettings(
    {
      db: path.join(dir, 'state.db'),
      hostId: `paths-${crypto.randomBytes(3).toString('hex')}`,
      metricsPort: '0',
      tenantRuntime: 'runc',
      pooledTemplates: 'default',
      engineStopGrace: `${PATH_GRACE_SEC}s`,
      gcMinAge: `${PATH_GC_MIN_AGE_SEC}s`,
      gcFirstDelay: '1s',
    },
    {},
  );
  installRuntime(undefined);
  const db = openStateDb(settings.db);
  db.prepare('UPDATE environment_templates SET base_image = ?').run(IMAGE);
  const dbFile = path.join(dir, 'temporal.db');
  const port = await freePort();
  let server: DevServer | undefined = await startDevServer({ dbFile, port });
  const proxy = await DockerProxy.start();
  const docker = new DockerClient(); // the bench's own hands on the engine, not through the proxy
  const target = resolveTemporalTarget(settings, { TEMPORAL_ADDRESS: server.address });
  const resolved = { ...target, address: target.address! };
  const native = await connectNative(resolved);
  const client = new Client({ connection: await connectClient(resolved), namespace: target.namespace });
  const host = createKeeperHost(settings, { db, docker: new DockerClient(proxy.dockerHost), log: silentLogger });
  const worker: Worker = await host.createWorker({ connection: native, namespace: target.namespace, shutdownGraceTime: '2s' });
  const running = worker.run();
  await host.ensureSchedules(client);
  const watch = host.watch(client);
  watch.start();
  return {
    settings,
    db,
    docker,
    proxy,
    tenant: addTenant(db),
    watch,
    async restartServerAfter(whileDown) {
      server!.process.kill('SIGKILL');
      await new Promise((r) => server!.process.once('exit', r));
      await whileDown();
      server = await startDevServer({ dbFile, port });
    },
    async stop() {
      await watch.stop();
      worker.shutdown();
      await running;
      await client.connection.close();
      await native.close();
      await server?.stop();
      await proxy.close();
      const ours = await docker.listContainers({ 'ah.managed': true }, { all: true });
      for (const c of ours) await docker.removeContainer(c.id, { force: true }).catch(() => undefined);
      for (const v of await docker.listVolumes('ah-pool-')) await docker.removeVolume(v.name).catch(() => undefined);
      await docker.removeNetwork('ah-pool').catch(() => undefined);
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

const BOUND_MS = 10 * 60_000;

/** A running service keeper has a snapshot of, once the tick its start requested has run (nothing else pending). */
export async function steadyService(h: PathHost): Promise<{ sid: string; cid: string }> {
  const sid = `svc-${crypto.randomBytes(3).toString('hex')}`;
  const cid = await h.docker.createContainer({
    name: `ah-${h.tenant}-${sid}`,
    image: IMAGE,
    cmd: ['sleep', '86400'],
    restartPolicy: 'unless-stopped',
    network: 'none',
    labels: { 'ah.tenant': h.tenant, 'ah.service': sid, 'ah.managed': 'true' },
  });
  await h.docker.startContainer(cid);
  addService(h.db, h.tenant, { containerId: cid }, sid);
  const startedAtMs = Date.now();
  await waitFor(
    "keeper's first snapshot of the new service",
    () => h.db.prepare('SELECT 1 FROM keeper_container_snapshots WHERE service_id = ?').get(sid),
    BOUND_MS,
    200,
  );
  await waitFor('the start request', () => Date.now() - startedAtMs > 13_000 && h.watch.events.idle, BOUND_MS, 200);
  return { sid, cid };
}

/** ms from `act` until `done`. */
export async function timed(act: () => Promise<unknown>, done: () => boolean | Promise<boolean>, what: string): Promise<number> {
  const t0 = Date.now();
  await act();
  await waitFor(what, done, BOUND_MS, 100);
  return Date.now() - t0;
}

export const crashCount = (h: PathHost, sid: string) => service(h.db, sid).crash_count as number;

export async function crashDuringSilence(h: PathHost): Promise<number> {
  const s = await steadyService(h);
  await waitFor(
    'the watcher following',
    () => h.db.prepare("SELECT state FROM keeper_event_watcher WHERE state = 'following'").get(),
    BOUND_MS,
    200,
  );
  h.proxy.stallStreams({ alsoNew: true });
  try {
    return await timed(
      () => crashContainer(h.docker, s.cid),
      () => crashCount(h, s.sid) === 1,
      'the crash committed',
    );
  } finally {
    h.proxy.restoreStreams();
  }
}

export async function missingContainerRow(h: PathHost): Promise<number> {
  let sid = '';
  return timed(
    async () => (sid = addService(h.db, h.tenant, { containerId: crypto.randomBytes(32).toString('hex') })),
    () => service(h.db, sid).status !== 'running',
    'the row handled',
  );
}

/** Lateness after the grace: ms from the stop plus the grace until counted. */
export async function stopOutsideAh(h: PathHost): Promise<number> {
  const s = await steadyService(h);
  const ms = await timed(
    () => h.docker.stopContainer(s.cid, 1),
    () => crashCount(h, s.sid) === 1,
    'the stop counted',
  );
  return ms - PATH_GRACE_SEC * 1000;
}

export async function deadWarmContainer(h: PathHost): Promise<number> {
  const ready = () =>
    h.db.prepare(`SELECT id, container_id AS cid FROM warm_pool WHERE status = 'ready'`).all() as { id: string; cid: string }[];
  const size = h.settings.poolSize;
  await waitFor('a full pool', () => ready().length === size, BOUND_MS, 200);
  const [victim] = ready();
  return timed(
    () => h.docker.stopContainer(victim.cid, 1),
    () => ready().length === size && !ready().some((r) => r.id === victim.id),
    'the pool whole again',
  );
}

/** Lateness after the age guard: ms from the orphan's creation plus the guard until removed. */
export async function orphanPastAgeGuard(h: PathHost): Promise<number> {
  let id = '';
  const gone = async () =>
    h.docker.inspectContainer(id).then(
      () => false,
      () => true,
    );
  const ms = await timed(
    async () => {
      id = await h.docker.createContainer({
        name: `ah-gone-${crypto.randomBytes(3).toString('hex')}`,
        image: IMAGE,
        cmd: ['sleep', '86400'],
        network: 'none',
        labels: { 'ah.tenant': 'gone', 'ah.service': 'svc-gone', 'ah.managed': 'true' },
      });
      await h.docker.startContainer(id);
    },
    gone,
    'the orphan removed',
  );
  return ms - PATH_GC_MIN_AGE_SEC * 1000;
}

/** ms from the server answering again until a crash made while it was down is committed. */
export async function crashDuringOutage(h: PathHost): Promise<number> {
  const s = await steadyService(h);
  await h.restartServerAfter(async () => {
    await crashContainer(h.docker, s.cid);
    await waitFor(
      'a request kept',
      () => h.watch.requests.reconcile.stats.failedAttempts > 0 || h.watch.requests.reconcile.waiting,
      BOUND_MS,
      200,
    );
  });
  const t0 = Date.now();
  await waitFor('the crash committed', () => crashCount(h, s.sid) === 1, BOUND_MS, 100);
  return Date.now() - t0;
}
