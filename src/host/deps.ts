/**
 * What every host operation is given: this host's state DB, Docker engine and settings, and the logger and
 * clock the composition root (src/app/open.ts) made or a caller injected. Nothing here reaches for a global,
 * and nothing here makes a default: host operations only take what they are given.
 */
import type { StateDb } from '../db/open';
import type { Engine } from '../docker/engine';
import type { Logger } from '../log';
import type { KeeperMetrics } from '../metrics';
import type { Settings } from '../settings';
import type { Clock } from '../time';
import type { EventHints } from '../watch/event-hints';

export interface HostDeps {
  db: StateDb;
  docker: Engine;
  settings: Settings;
  log: Logger;
  clock: Clock;
  /** keeper's Prometheus metrics; absent in one-shot commands and most tests. */
  metrics?: KeeperMetrics;
  /** What the worker's event watcher heard (a worker's only): containers whose list entry an observation must not trust. */
  hints?: EventHints;
}
