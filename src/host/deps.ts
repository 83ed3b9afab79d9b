/**
 * What every host operation is given: this host's state DB, Docker engine and settings, and the logger and
 * clock the composition root (src/keeper-host.ts) injected. Nothing here reaches for a global.
 */
import { openStateDb, type StateDb } from '../db/open';
import { DockerClient } from '../docker/client';
import type { Engine } from '../docker/engine';
import { createLogger, type Logger } from '../log';
import type { KeeperMetrics } from '../metrics';
import type { Settings } from '../settings';
import { systemClock, type Clock } from '../time';

export interface HostDeps {
  db: StateDb;
  docker: Engine;
  settings: Settings;
  log: Logger;
  clock: Clock;
  /** keeper's Prometheus metrics; absent in one-shot commands and most tests. */
  metrics?: KeeperMetrics;
}

/** What a caller may inject; everything else is made from the settings. */
export interface HostParts {
  log?: Logger;
  clock?: Clock;
  docker?: Engine;
  /** A DB the caller opened (and closes); otherwise --db is opened. */
  db?: StateDb;
  metrics?: KeeperMetrics;
}

/** A plain logger for this host: stderr, in the configured format. */
export function hostLogger(settings: Settings): Logger {
  return createLogger({ format: settings.logFormat, fields: { host: settings.hostId }, debug: !!process.env.KEEPER_DEBUG });
}

/** This host's dependencies: the parts given, the defaults for the rest. */
export function hostDeps(settings: Settings, parts: HostParts = {}): HostDeps {
  return {
    settings,
    db: parts.db ?? openStateDb(settings.db),
    docker: parts.docker ?? new DockerClient(),
    log: parts.log ?? hostLogger(settings),
    clock: parts.clock ?? systemClock,
    metrics: parts.metrics,
  };
}
