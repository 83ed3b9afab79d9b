import type { StateDb } from '../db/open';
import type { DockerClient } from '../docker/client';
import type { KeeperMetrics } from '../metrics';
import type { Settings } from '../settings';

/** What every activity factory is given: this host's DB, engine and settings. */
export interface ActivityDeps {
  db: StateDb;
  docker: DockerClient;
  settings: Settings;
  /** keeper's Prometheus metrics; absent in tests and one-off commands. */
  metrics?: KeeperMetrics;
}
