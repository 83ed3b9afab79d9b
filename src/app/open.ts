/**
 * The parts every keeper process opens, made here and nowhere else: the logger, the Docker engine client, the
 * state DB, and the host's dependencies (HostDeps) built from them. A process opens its host in one of three
 * modes, which decide what it may do to the state DB:
 * - `worker`: the only mode that creates a state DB (with ah's schema) where none exists;
 * - `command`: a one-shot command that changes things (a tick, a reset, a claim) on an existing DB;
 * - `status`: reads (status, crashes, pool status).
 * Tests and benchmarks inject what they own (a logger that captures lines, a clock, an engine behind a fault
 * proxy, a DB they opened) and take these for the rest.
 */
import { activityLogContext } from '../activities/log-context';
import { giveWayToOtherWriters } from '../db/busy';
import { openStateDb, openStateDbAsIs, type StateDb } from '../db/open';
import { readWorkerConfig } from '../db/worker-config';
import { COMMAND_DEADLINES, DockerClient, WORKER_DEADLINES } from '../docker/client';
import type { Engine } from '../docker/engine';
import type { HostDeps } from '../host/deps';
import { createLogger, type Logger } from '../log';
import type { KeeperMetrics } from '../metrics';
import type { Settings } from '../settings';
import { systemClock, type Clock } from '../time';

export type HostMode = 'worker' | 'command' | 'status';

// The CLI opens the state DB only here: its errors, and the whole-file copies of keeper backup and restore.
export { StateDbError, StateDbMissingError } from '../db/open';
export { checkBackup, copySqliteOnline, refuseLiveDb, type CopyResult } from '../db/backup';

/** What a caller may inject; everything else is made from the settings. */
export interface HostParts {
  log?: Logger;
  clock?: Clock;
  docker?: Engine;
  /** A DB the caller opened (and closes); otherwise --db is opened, and closed by `close`. */
  db?: StateDb;
  metrics?: KeeperMetrics;
}

/**
 * The one logger factory: stderr, in --log-format and --log-level, every line naming the host. In a worker
 * process, lines written inside an activity also carry its ids, so a line leads to its run in the UI.
 */
export function hostLogger(settings: Pick<Settings, 'logFormat' | 'logLevel' | 'hostId'>, opts: { inWorker?: boolean } = {}): Logger {
  return createLogger({
    format: settings.logFormat,
    level: settings.logLevel,
    fields: { host: settings.hostId },
    ...(opts.inWorker ? { context: activityLogContext } : {}),
  });
}

/**
 * The one way a process reaches its Docker engine: --docker-host (DOCKER_HOST), else the local socket. A worker's
 * calls each have a worker's deadline; a command's are a one-shot client's (a ping first, shorter reads, and no call
 * after one went unanswered), so that a command answers within seconds of a wedged engine (src/docker/client.ts).
 */
export function hostEngine(settings: Pick<Settings, 'dockerHost'>, mode: HostMode): DockerClient {
  if (mode === 'worker') return new DockerClient(settings.dockerHost, { deadlines: WORKER_DEADLINES });
  return new DockerClient(settings.dockerHost, { deadlines: COMMAND_DEADLINES, oneShot: true });
}

/**
 * Opens the state DB as `mode` allows: only a worker creates one. A worker's connection then gives way to another
 * writer's lock at once, and waits for it awaited (src/db/busy.ts), so that its event loop never stalls for seconds.
 */
export function openHostDb(settings: Pick<Settings, 'db'>, mode: HostMode): StateDb {
  const db = openStateDb(settings.db, { create: mode === 'worker' });
  if (mode === 'worker') giveWayToOtherWriters(db);
  return db;
}

/** Opens an existing state DB without creating or migrating anything (keeper uninstall, which may drop keeper's tables). */
export function openHostDbAsIs(settings: Pick<Settings, 'db'>): StateDb {
  return openStateDbAsIs(settings.db);
}

export interface OpenedHost {
  deps: HostDeps;
  /** Closes what was opened here (the DB, unless the caller gave it). */
  close(): void;
}

/**
 * A command's tenant runtime is the one this host's worker runs, as the worker recorded it at its start (a dev
 * worker on an engine without gVisor falls back to runc), unless the command was given --tenant-runtime itself:
 * a service or environment a command creates runs as the worker's do.
 */
function withWorkersRuntime(settings: Settings, db: StateDb): Settings {
  if (settings.tenantRuntimeGiven) return settings;
  const worker = readWorkerConfig(db, settings.hostId);
  return worker ? { ...settings, tenantRuntime: worker.config.tenantRuntime } : settings;
}

/** This host's dependencies for one process: the parts given, the rest opened from the settings. */
export function openHost(settings: Settings, mode: HostMode, parts: HostParts = {}): OpenedHost {
  const db = parts.db ?? openHostDb(settings, mode);
  const deps: HostDeps = {
    settings: mode === 'command' ? withWorkersRuntime(settings, db) : settings,
    db,
    docker: parts.docker ?? hostEngine(settings, mode),
    log: parts.log ?? hostLogger(settings, { inWorker: mode === 'worker' }),
    clock: parts.clock ?? systemClock,
    metrics: parts.metrics,
  };
  return { deps, close: () => (parts.db ? undefined : db.close()) };
}
