/**
 * The host bench:cost measures: a fresh SQLite file, the CLI's dev server with its DB in a file and its /metrics
 * on a port, and a keeper worker wired as `keeper worker` wires one (every schedule, the event watcher), at the
 * default settings. Everything it starts or creates is undone by `teardown()`, in reverse order, also after a
 * failure or a signal.
 */
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { openStateDb, type StateDb } from '../src/db/open';
import { findTemplate, poolRows } from '../src/db/pool';
import { DockerClient } from '../src/docker/client';
import { createKeeperHost, type KeeperHost } from '../src/app/keeper-host';
import { silentLogger } from '../src/log';
import { createService } from '../src/host/services';
import { SCHEDULED_LOOPS } from '../src/loops/registry';
import { loadSettings, optionName, SETTINGS, type Settings } from '../src/settings';
import { connectClient, resolveTemporalTarget } from '../src/temporal/connection';
import { freePort, startDevServer } from '../src/temporal/dev-server';
import { connectNative } from '../src/temporal/native';
import { installRuntime } from '../src/temporal/runtime';

export const WEB_IMAGE = 'keeper-test/web:latest';
export const CRASHLOOP_IMAGE = 'keeper-test/crashloop:latest';
/** What a pool template's image is tagged from on the bench's engine: `sleep infinity` works in busybox. */
const POOL_IMAGE_SOURCE = 'keeper-test/busybox:latest';

const undo: { what: string; fn: () => Promise<unknown> | unknown }[] = [];

export function onTeardown(what: string, fn: () => Promise<unknown> | unknown): void {
  undo.push({ what, fn });
}

/** How many steps are registered: teardown(mark) undoes only what came after. */
export const undoDepth = () => undo.length;

/** Undoes what was registered after `mark`, newest first; a step that fails is reported and the rest still run. */
export async function teardown(mark = 0): Promise<void> {
  while (undo.length > mark) {
    const step = undo.pop()!;
    try {
      await step.fn();
    } catch (err) {
      process.stderr.write(`bench:cost: teardown: ${step.what} failed: ${(err as Error).message.split('\n')[0]}\n`);
    }
  }
}

export interface CostHost {
  settings: Settings;
  db: StateDb;
  client: Client;
  host: KeeperHost;
  tenant: string;
  metricsUrl: string;
  temporalDbFile: string;
}

/** The dev server, the state DB and the worker with its schedules and watcher; torn down by teardown(). */
export async function startCostHost(workflowBundle: { codePath: string }, loopIntervalMs?: number): Promise<CostHost> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keeper-bench-cost-'));
  onTeardown(`remove ${dir}`, () => fs.rmSync(dir, { recursive: true, force: true }));
  const hostId = `cost-${crypto.randomBytes(3).toString('hex')}`;
  // No environment: every setting is keeper's default, except the tenant runtime (the engines here lack gVisor) and,
  // with --loop-interval, the schedules' backstop intervals (measured shorter, scaled back to their defaults).
  const every = loopIntervalMs ? `${loopIntervalMs}ms` : undefined;
  const flagOf = (key: string) => optionName(SETTINGS.find((s) => s.key === key)!.flag);
  const intervals = every ? Object.fromEntries(SCHEDULED_LOOPS.map((l) => [flagOf(l.schedule.every), every])) : {};
  const settings = loadSettings(
    {
      db: path.join(dir, 'state.db'),
      hostId,
      metricsPort: '0',
      tenantRuntime: process.env.KEEPER_TENANT_RUNTIME ?? 'runc',
      ...intervals,
    },
    {},
  );
  const metricsPort = await freePort();
  const temporalDbFile = path.join(dir, 'temporal.db');
  const server = await startDevServer({ dbFile: temporalDbFile, extraArgs: ['--metrics-port', String(metricsPort)] });
  onTeardown('stop the dev server', () => server.stop());
  installRuntime(undefined);
  const db = openStateDb(settings.db);
  onTeardown('close the state DB', () => db.close());
  const target = resolveTemporalTarget(settings, { TEMPORAL_ADDRESS: server.address });
  const resolved = { ...target, address: target.address! };
  const native = await connectNative(resolved);
  onTeardown('close the worker connection', () => native.close());
  const client = new Client({ connection: await connectClient(resolved), namespace: target.namespace });
  onTeardown('close the client', () => client.connection.close());
  const tenant = hostId;
  onTeardown('remove the containers, volumes and networks', () => removeWhatTheHostMade(db, tenant));
  const host = createKeeperHost(settings, { db, log: silentLogger });
  const worker = await host.createWorker({ connection: native, namespace: target.namespace, shutdownGraceTime: '2s', workflowBundle });
  const running = worker.run();
  onTeardown('stop the worker', () => stopWorker(worker, running));
  await host.ensureSchedules(client);
  // What `keeper worker` runs between runs: the event watcher, the disk watcher and the local looks.
  const watch = host.watch(client);
  watch.start();
  onTeardown('stop the watchers and the looks', () => watch.stop());
  return { settings, db, client, host, tenant, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`, temporalDbFile };
}

async function stopWorker(worker: Worker, running: Promise<void>): Promise<void> {
  if (worker.getState() === 'RUNNING') worker.shutdown();
  await running;
}

/** Service and pool containers (by this host's rows and tenant label), pool volumes, the networks. */
async function removeWhatTheHostMade(db: StateDb, tenant: string): Promise<void> {
  const docker = new DockerClient();
  const pool = db.open ? poolRows(db) : [];
  const containers = new Set([...(pool.map((r) => r.containerId).filter(Boolean) as string[])]);
  for (const c of await docker.listContainers({ 'ah.tenant': tenant }, { all: true })) containers.add(c.id);
  for (const id of containers) await docker.removeContainer(id, { force: true }).catch(() => undefined);
  for (const r of pool) if (r.volumeName) await docker.removeVolume(r.volumeName).catch(() => undefined);
  await docker.removeNetwork(`ah-tenant-${tenant}`).catch(() => undefined);
  await docker.removeNetwork('ah-pool').catch(() => undefined);
}

/**
 * Tags the test image as each pooled template's image the engine lacks (keeper never pulls), and removes those
 * tags again at teardown; an image the engine already had is left as it was.
 */
export async function provideTemplateImages(h: CostHost): Promise<string[]> {
  const docker = new DockerClient();
  const tagged: string[] = [];
  for (const name of h.settings.pooledTemplates) {
    const image = findTemplate(h.db, name)?.baseImage;
    if (!image || (await docker.imageExists(image))) continue;
    execFileSync('docker', ['tag', POOL_IMAGE_SOURCE, image], { env: process.env });
    tagged.push(image);
    onTeardown(`untag ${image}`, () => docker.removeImage(image));
  }
  return tagged;
}

/** `count` services as `keeper service create` makes them: row, container under the tenant runtime, running. */
export async function createServices(h: CostHost, count: number, image: string, namePrefix: string): Promise<void> {
  for (let i = 0; i < count; i++) {
    await createService(h.host.deps, { tenant: h.tenant, name: `${namePrefix}-${i}`, image });
  }
}
