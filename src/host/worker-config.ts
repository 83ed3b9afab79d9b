/**
 * The worker's effective configuration, recorded at its start (keeper_worker_config) so that `keeper status`, a
 * separate process with flags of its own, reports what the worker uses, and says where its own flags differ.
 */
import ms from 'ms';
import { recordWorkerConfig, type WorkerConfig, type WorkerConfigRecord } from '../db/worker-config';
import type { Settings } from '../settings';
import { unixSeconds } from '../time';
import { keeperVersion } from '../version';
import type { HostDeps } from './deps';
import { planNotification } from './notifications';

export type { WorkerConfig, WorkerConfigRecord };

/** What a worker with `settings` runs with; `temporal` as describeTarget words it. */
export function workerConfigOf(settings: Settings, temporal: string, temporalEmbedded: boolean): WorkerConfig {
  return {
    temporal,
    temporalEmbedded,
    tenantRuntime: settings.tenantRuntime,
    webhooks: planNotification({ settings }).targets.map((t) => t.shown),
    signed: settings.notifySecret !== undefined,
    notifyRetryForMs: settings.notifyRetryForMs,
    reconcileIntervalMs: settings.reconcileIntervalMs,
    gcIntervalMs: settings.gcIntervalMs,
    poolIntervalMs: settings.poolIntervalMs,
    reconcileLookIntervalMs: settings.reconcileLookIntervalMs,
    gcLookIntervalMs: settings.gcLookIntervalMs,
    poolLookIntervalMs: settings.poolLookIntervalMs,
    crashWindowMs: settings.crashWindowMs,
    crashThreshold: settings.crashThreshold,
    recovery: settings.recovery,
  };
}

/** The worker's one call at start: its version, pid and configuration replace the previous worker's. */
export function recordWorkerStart(
  deps: Pick<HostDeps, 'db' | 'settings'> & Partial<Pick<HostDeps, 'clock'>>,
  temporal: string,
  temporalEmbedded: boolean,
): void {
  recordWorkerConfig(deps.db, {
    hostId: deps.settings.hostId,
    keeperVersion: keeperVersion(),
    startedAt: unixSeconds(deps.clock),
    pid: process.pid,
    config: workerConfigOf(deps.settings, temporal, temporalEmbedded),
  });
}

const duration = (v: unknown) => ms(v as number);
const webhooks = (v: unknown) => ((v as string[]).length === 0 ? 'none' : (v as string[]).join(', '));

/** Each recorded field, the settings that make it, and its words. */
const FIELDS: { field: keyof WorkerConfig; flag: string; settings: (keyof Settings)[]; words: (v: unknown) => string }[] = [
  {
    field: 'temporal',
    flag: '--temporal-address',
    settings: ['temporalAddress', 'namespace', 'temporalProfile', 'temporalApiKeyFile'],
    words: String,
  },
  { field: 'tenantRuntime', flag: '--tenant-runtime', settings: ['tenantRuntime'], words: String },
  { field: 'webhooks', flag: '--notify-webhook', settings: ['notifyWebhooks'], words: webhooks },
  { field: 'signed', flag: '--notify-secret', settings: ['notifySecret', 'notifySecretFile'], words: (v) => (v ? 'signed' : 'unsigned') },
  { field: 'notifyRetryForMs', flag: '--notify-retry-for', settings: ['notifyRetryForMs'], words: duration },
  { field: 'reconcileIntervalMs', flag: '--reconcile-interval', settings: ['reconcileIntervalMs'], words: duration },
  { field: 'gcIntervalMs', flag: '--gc-interval', settings: ['gcIntervalMs'], words: duration },
  { field: 'poolIntervalMs', flag: '--pool-interval', settings: ['poolIntervalMs'], words: duration },
  { field: 'reconcileLookIntervalMs', flag: '--reconcile-look-interval', settings: ['reconcileLookIntervalMs'], words: duration },
  { field: 'gcLookIntervalMs', flag: '--gc-look-interval', settings: ['gcLookIntervalMs'], words: duration },
  { field: 'poolLookIntervalMs', flag: '--pool-look-interval', settings: ['poolLookIntervalMs'], words: duration },
  { field: 'crashWindowMs', flag: '--crash-window', settings: ['crashWindowMs'], words: duration },
  { field: 'crashThreshold', flag: '--crash-threshold', settings: ['crashThreshold'], words: String },
  { field: 'recovery', flag: '--recovery', settings: ['recovery'], words: String },
];

export interface ConfigDifference {
  flag: string;
  here: string;
  worker: string;
}

/** Where the settings given to this command (flag or variable) differ from what the worker runs with. */
export function configDifferences(worker: WorkerConfig, here: WorkerConfig, given: Set<keyof Settings>): ConfigDifference[] {
  return FIELDS.filter(
    (f) => f.settings.some((s) => given.has(s)) && JSON.stringify(worker[f.field]) !== JSON.stringify(here[f.field]),
  ).map((f) => ({ flag: f.flag, here: f.words(here[f.field]), worker: f.words(worker[f.field]) }));
}

/** The loops' pace and the circuit's rule, in one line. */
export function workerPaceWords(c: WorkerConfig): string {
  const looked = (everyMs: number | undefined) => (everyMs ? `, looked at every ${ms(everyMs)}` : '');
  return (
    `reconcile on events${looked(c.reconcileLookIntervalMs)}, backstop ${ms(c.reconcileIntervalMs)}; ` +
    `gc${looked(c.gcLookIntervalMs)}, backstop ${ms(c.gcIntervalMs)}; ` +
    `pool on claims${looked(c.poolLookIntervalMs)}, backstop ${ms(c.poolIntervalMs)}; ` +
    `circuit opens at ${c.crashThreshold} crashes in ${ms(c.crashWindowMs)}, recovery ${c.recovery}`
  );
}
