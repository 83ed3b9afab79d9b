/**
 * The real stack a soak runs on, all of its own: an extra Docker engine (engine.ts), a Temporal CLI dev server with a
 * persistent --db-filename on a fixed port (so it can be killed and started again), a fault proxy in front of the
 * engine (test/helpers/docker-proxy.ts) through which alone the worker reaches it, a state DB, a webhook receiver, and
 * the built `keeper worker`. Every part is registered with the run's Cleanup as soon as it exists.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Dockerode from 'dockerode';
import { openStateDb, type StateDb } from '../../src/db/open';
import { freePort, startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { DockerProxy, engineSocket } from '../../test/helpers/docker-proxy';
import type { ExtraEngine } from '../../test/helpers/engines';
import { WebhookReceiver } from '../../test/helpers/webhook-receiver';
import type { Cleanup } from './cleanup';
import type { EngineStarter } from './engine';
import type { SoakOptions } from './options';
import { makeServices, soakDocker, type SoakService } from './services';
import { EngineWitness } from './truth';
import { SoakWorker } from './worker';

export interface Rig {
  dir: string;
  hostId: string;
  engine: ExtraEngine;
  starter: EngineStarter;
  /** The engine directly, not through the proxy: the soak's own calls. */
  docker: Dockerode;
  proxy: DockerProxy;
  receiver: WebhookReceiver;
  temporal: SoakTemporal;
  db: StateDb;
  dbFile: string;
  worker: SoakWorker;
  services: SoakService[];
  witness: EngineWitness;
}

/** The soak's dev server: SIGKILLed and started again on the same file and port, as a crashed server is. */
export class SoakTemporal {
  private server: DevServer | undefined;

  private constructor(
    readonly dbFile: string,
    readonly port: number,
  ) {}

  static async start(dbFile: string): Promise<SoakTemporal> {
    const t = new SoakTemporal(dbFile, await freePort());
    await t.up();
    return t;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  async up(): Promise<void> {
    this.server = await startDevServer({ dbFile: this.dbFile, port: this.port, startTimeoutMs: 120_000 });
  }

  async kill(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s || s.process.exitCode !== null || s.process.signalCode !== null) return;
    const gone = new Promise((r) => s.process.once('exit', r));
    s.process.kill('SIGKILL');
    await gone;
  }

  async stop(): Promise<void> {
    await this.server?.stop();
    this.server = undefined;
  }
}

/** The worker's flags: short circuit timings, every crash record kept, the receiver as its webhook. */
function workerArgs(o: SoakOptions, dbFile: string, hostId: string, webhook: string): string[] {
  const k = o.keeper;
  return [
    ...['--db', dbFile, '--host-id', hostId, '--metrics-port', '0', '--log-format', 'json'],
    ...['--crash-window', k.crashWindow, '--crash-threshold', String(k.crashThreshold)],
    ...['--circuit-backoff', k.circuitBackoff, '--escalation-decay', k.escalationDecay],
    ...['--reconcile-interval', k.reconcileInterval, '--crash-record-max-per-service', '0'],
    ...['--notify-webhook', webhook, '--pooled-templates', '', '--tenant-runtime', 'runc'],
  ];
}

/** Starts the whole stack; each part is stopped by `cleanup`, also when a later one fails to start. */
export async function startRig(o: SoakOptions, starter: EngineStarter, cleanup: Cleanup, log: (line: string) => void): Promise<Rig> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keeper-soak-'));
  const hostId = `soak-${o.seed.toString(16)}`;
  log(`run directory ${dir}`);
  const engine = await starter.start();
  cleanup.add(`engine ${engine.name}`, () => starter.stop(engine));
  log(`engine ${engine.name} at ${engine.dockerHost}`);
  const docker = soakDocker(engine.dockerHost);
  const dbFile = path.join(dir, 'state.db');
  const db = openStateDb(dbFile);
  cleanup.add('state DB', () => void db.close());

  const startedMs = Date.now() - 1000;
  const services = await makeServices(docker, db, dir, o.services, { every: o.healthEvery, intervalMs: o.healthCheckEveryMs });
  const witness = new EngineWitness(
    docker,
    services.map((s) => s.containerId),
    startedMs,
    path.join(dir, 'events.jsonl'),
  );
  await witness.start();
  cleanup.add("the soak's event stream", () => witness.stop());
  log(`${services.length} services running`);

  const temporal = await SoakTemporal.start(path.join(dir, 'temporal', 'temporal.db'));
  cleanup.add('Temporal dev server', () => temporal.stop());
  const proxy = await DockerProxy.start(engineSocket(engine.dockerHost));
  cleanup.add('fault proxy', () => (proxy.release(), proxy.close()));
  const receiver = await WebhookReceiver.start();
  cleanup.add('webhook receiver', () => receiver.down());

  const worker = new SoakWorker(
    workerArgs(o, dbFile, hostId, receiver.url()),
    { TEMPORAL_ADDRESS: temporal.address, DOCKER_HOST: proxy.dockerHost },
    path.join(dir, 'worker.log'),
  );
  cleanup.add('keeper worker', () => worker.stop());
  await worker.start();
  log(`keeper worker running (host ${hostId}, Temporal ${temporal.address}, log ${worker.logFile})`);
  return { dir, hostId, engine, starter, docker, proxy, receiver, temporal, db, dbFile, worker, services, witness };
}
