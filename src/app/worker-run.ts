/**
 * `keeper worker`'s whole life, over a Keeper in worker mode, in the order that keeps a bad start harmless: the
 * logger and the engine; the tenant runtime (a missing one stops the worker before it writes or starts anything);
 * the SDK's runtime and metrics endpoint; the state DB (a bad one fails before any server starts); Temporal (the
 * configured cluster, or an embedded dev server persisted next to the state DB); the worker, the schedules, the
 * record of this start; then the watchers and the local looks. It runs until SIGINT or SIGTERM, then drains; the
 * Keeper closes everything in reverse.
 */
import { Client, type Connection } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { workerTenantRuntime, type WorkerTenantRuntime } from '../host/tenant-runtime';
import { recordWorkerStart } from '../host/worker-config';
import { taskQueueFor } from '../ids';
import type { Logger } from '../log';
import { EMBEDDED_TEMPORAL_PORT, EMBEDDED_UI_PORT, type Settings } from '../settings';
import { connectClient, describeTarget, resolveTemporalTarget, type TemporalTarget } from '../temporal/connection';
import { embeddedTemporalDbFile, resolveTemporalCli, startDevServer, type DevServer } from '../temporal/dev-server';
import { connectNative } from '../temporal/native';
import type { HostDeps } from '../host/deps';
import type { Engine } from '../docker/engine';
import { SHUTDOWN_GRACE, type KeeperHost } from './keeper-host';
import { watchEventLoopDelay } from './loop-delay';
import { warnOfOtherHostIds } from './other-host-ids';

/** What a worker's run takes of its Keeper (src/app/keeper.ts): the parts, opened when first asked for. */
export interface WorkerRunParts {
  readonly settings: Settings;
  readonly log: Logger;
  readonly engine: Engine;
  readonly deps: HostDeps;
  readonly host: KeeperHost;
  useSettings(settings: Settings): void;
  installRuntime(): void;
  onClose(what: string, close: () => Promise<unknown> | unknown): void;
}

export interface TemporalSession {
  target: TemporalTarget & { address: string };
  native: NativeConnection;
  connection: Connection;
  uiUrl: string | undefined;
  embedded: DevServer | undefined;
}

/** What a started worker shows its operator (the banner): the settings in force and where it runs. */
export interface StartedWorker {
  settings: Settings;
  tenants: WorkerTenantRuntime;
  temporal: TemporalSession;
  client: Client;
}

/** Runs this host's worker until SIGINT or SIGTERM; `onStarted` is told once it polls and watches. */
export async function runHostWorker(keeper: WorkerRunParts, onStarted: (started: StartedWorker) => Promise<void> | void): Promise<void> {
  const { log } = keeper;
  const embeddedTemporal = !resolveTemporalTarget(keeper.settings).address;
  const tenants = await workerTenantRuntime({ docker: keeper.engine, settings: keeper.settings, log, embeddedTemporal });
  keeper.useSettings({ ...keeper.settings, tenantRuntime: tenants.runtime });
  keeper.installRuntime();
  const { settings, db } = keeper.deps;
  const temporal = await openTemporal(keeper);
  const client = new Client({ connection: temporal.connection, namespace: temporal.target.namespace });
  const { host } = keeper;
  const worker = await host.createWorker({ connection: temporal.native, namespace: temporal.target.namespace });
  await host.ensureSchedules(client);
  recordWorkerStart({ db, settings }, describeTarget(temporal.target), temporal.embedded !== undefined);
  await warnOfOtherHostIds(client, db, settings.hostId, settings.db, log);
  const watch = host.watch(client);
  watch.start();
  keeper.onClose('the watchers and the local looks', () => watch.stop());
  const loopDelay = watchEventLoopDelay(log, keeper.deps.metrics);
  keeper.onClose("the event loop's watch", () => loopDelay.stop());
  stopOnSignals(log, () => worker.shutdown());
  await onStarted({ settings, tenants, temporal, client });
  log.info('keeper worker started', {
    taskQueue: taskQueueFor(settings.hostId),
    temporal: describeTarget(temporal.target),
    ui: temporal.uiUrl,
  });
  await worker.run();
  log.info('keeper worker stopped');
}

function stopOnSignals(log: Logger, stop: () => void): void {
  const onSignal = (signal: string) => {
    log.info('shutting down: running activities get a grace time', { signal, grace: SHUTDOWN_GRACE });
    stop();
  };
  process.once('SIGINT', () => onSignal('SIGINT'));
  process.once('SIGTERM', () => onSignal('SIGTERM'));
}

/** The configured Temporal, or the embedded dev server when no address is configured anywhere; closed by the Keeper. */
async function openTemporal(keeper: WorkerRunParts): Promise<TemporalSession> {
  const { settings } = keeper;
  const configured = resolveTemporalTarget(settings);
  const embedded = configured.address
    ? undefined
    : await startDevServer({
        binary: resolveTemporalCli(settings.temporalCli),
        dbFile: embeddedTemporalDbFile(settings.db),
        namespace: configured.namespace,
        port: EMBEDDED_TEMPORAL_PORT,
        uiPort: EMBEDDED_UI_PORT,
      });
  if (embedded) keeper.onClose('the embedded Temporal dev server', () => embedded.stop());
  const target = { ...configured, address: configured.address ?? embedded!.address };
  const native = await connectNative(target);
  keeper.onClose('the worker connection', () => native.close());
  const connection = await connectClient(target);
  keeper.onClose('the client connection', () => connection.close());
  return { target, native, connection, uiUrl: embedded?.uiUrl, embedded };
}
