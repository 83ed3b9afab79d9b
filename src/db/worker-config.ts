/** keeper_worker_config: what the last worker started on this host runs with (see keeper_1701). */
import type { StateDb } from './open';

/** The settings an operator asks about, as the worker resolved them; nothing secret (webhooks by origin and hash). */
export interface WorkerConfig {
  /** describeTarget's words: address, namespace, TLS, auth kind, profile; embedded or not. */
  temporal: string;
  /** The worker runs its own embedded dev server. */
  temporalEmbedded: boolean;
  tenantRuntime: string;
  webhooks: string[];
  signed: boolean;
  notifyRetryForMs: number;
  reconcileIntervalMs: number;
  gcIntervalMs: number;
  poolIntervalMs: number;
  /** The local looks' intervals; absent from records of workers from before the looks. */
  reconcileLookIntervalMs?: number;
  gcLookIntervalMs?: number;
  poolLookIntervalMs?: number;
  crashWindowMs: number;
  crashThreshold: number;
  recovery: string;
}

export interface WorkerConfigRecord {
  hostId: string;
  keeperVersion: string;
  startedAt: number; // unix seconds
  pid: number;
  config: WorkerConfig;
}

/** A worker's start replaces the record of the one before it. */
export function recordWorkerConfig(db: StateDb, r: WorkerConfigRecord): void {
  db.prepare(
    `INSERT INTO keeper_worker_config (host_id, keeper_version, started_at, pid, config_json) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT(host_id) DO UPDATE SET keeper_version = excluded.keeper_version, started_at = excluded.started_at,
       pid = excluded.pid, config_json = excluded.config_json`,
  ).run(r.hostId, r.keeperVersion, r.startedAt, r.pid, JSON.stringify(r.config));
}

/** The host's record, or null when no worker has started here since keeper_1701. */
export function readWorkerConfig(db: StateDb, hostId: string): WorkerConfigRecord | null {
  const row = db
    .prepare('SELECT host_id, keeper_version, started_at, pid, config_json FROM keeper_worker_config WHERE host_id = ?')
    .get(hostId) as { host_id: string; keeper_version: string; started_at: number; pid: number; config_json: string } | undefined;
  if (!row) return null;
  return {
    hostId: row.host_id,
    keeperVersion: row.keeper_version,
    startedAt: row.started_at,
    pid: row.pid,
    config: JSON.parse(row.config_json) as WorkerConfig,
  };
}
