/**
 * keeper's settings: every constant the loops use, each a flag `--name` and a variable `KEEPER_NAME`.
 *
 * This is the one place where defaults live. Values are parsed and validated once, at start; a bad value
 * throws a SettingsError whose message is one line naming the setting, so that keeper never runs on a
 * half-understood configuration.
 */
import os from 'node:os';

export class SettingsError extends Error {
  override name = 'SettingsError';
}

export type RecoveryMode = 'restart' | 'stop';
export type LogFormat = 'json' | 'pretty';

export interface Settings {
  db: string;
  hostId: string;
  temporalAddress: string | undefined;
  namespace: string;
  reconcileInterval: number; // all durations are milliseconds
  eventDebounce: number;
  crashWindow: number;
  crashThreshold: number;
  circuitBackoff: number[];
  recovery: RecoveryMode;
  escalationDecay: number;
  staleDeployAfter: number;
  staleEnvCreateAfter: number;
  gcInterval: number;
  gcFirstDelay: number;
  gcMinAge: number;
  buildDir: string;
  buildDirMaxAge: number;
  snapshotMaxPerService: number;
  snapshotMaxAge: number;
  poolInterval: number;
  poolSize: number;
  poolMaxTotal: number;
  pooledTemplates: string[];
  diskWarn: number;
  diskBlock: number;
  diskPaths: string[];
  metricsPort: number;
  logFormat: LogFormat;
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `500ms`, `30s`, `10m`, `4h` or `30d` (a sum such as `1h30m` too) into milliseconds. */
export function parseDuration(text: string): number {
  const trimmed = text.trim();
  const parts = [...trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== trimmed) {
    throw new Error(`"${text}" is not a duration (use e.g. 500ms, 30s, 10m, 4h, 30d)`);
  }
  return parts.reduce((ms, [, n, unit]) => ms + Number(n) * UNITS[unit], 0);
}

/** Formats milliseconds the way an operator writes them: 30s, 10m, 4h, 30d, 1h30m. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  let rest = ms;
  let out = '';
  for (const unit of ['d', 'h', 'm', 's', 'ms']) {
    const size = UNITS[unit];
    if (rest >= size) {
      out += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
    }
  }
  return out;
}

type Parser<T> = (raw: string) => T;

const positiveDuration: Parser<number> = (raw) => {
  const ms = parseDuration(raw);
  if (ms <= 0) throw new Error(`must be a positive duration, got "${raw}"`);
  return ms;
};

const durationAllowingZero: Parser<number> = (raw) => parseDuration(raw);

function integer(min: number, max = Number.MAX_SAFE_INTEGER): Parser<number> {
  return (raw) => {
    if (!/^-?\d+$/.test(raw.trim())) throw new Error(`must be an integer, got "${raw}"`);
    const n = Number(raw);
    if (n < min || n > max) throw new Error(`must be between ${min} and ${max}, got ${n}`);
    return n;
  };
}

function oneOf<T extends string>(...values: T[]): Parser<T> {
  return (raw) => {
    if (!(values as string[]).includes(raw)) throw new Error(`must be one of ${values.join(', ')}, got "${raw}"`);
    return raw as T;
  };
}

const nonEmpty: Parser<string> = (raw) => {
  if (raw.trim() === '') throw new Error('must not be empty');
  return raw;
};

const hostId: Parser<string> = (raw) => {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/.test(raw)) {
    throw new Error(`must be 1-63 letters, digits, '.', '_' or '-', got "${raw}"`);
  }
  return raw;
};

const backoffList: Parser<number[]> = (raw) => {
  const steps = raw.split(',').map((s) => positiveDuration(s));
  if (steps.length === 0) throw new Error('needs at least one duration');
  return steps;
};

function list(item: Parser<string> = nonEmpty): Parser<string[]> {
  return (raw) => (raw.trim() === '' ? [] : raw.split(',').map((s) => item(s.trim())));
}

const percent: Parser<number> = (raw) => {
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || n < 0 || n > 100) {
    throw new Error(`must be a percentage between 0 and 100, got "${raw}"`);
  }
  return n;
};

interface SettingSpec<K extends keyof Settings = keyof Settings> {
  key: K;
  flag: string;
  env: string;
  /** The default as an operator would type it; undefined means unset. */
  default: string | (() => string) | undefined;
  parse: Parser<Settings[K]>;
  help: string;
}

function spec<K extends keyof Settings>(
  key: K,
  flag: string,
  defaultValue: SettingSpec<K>['default'],
  parse: Parser<Settings[K]>,
  help: string,
  env = 'KEEPER_' + flag.toUpperCase().replace(/-/g, '_'),
): SettingSpec<K> {
  return { key, flag, env, default: defaultValue, parse, help };
}

/** The Settings table of DESIGN.md, in its order. README's config table is generated from this list. */
export const SETTINGS: SettingSpec[] = [
  spec('db', 'db', 'data/state.db', nonEmpty, 'SQLite state DB (the ah schema); created if absent'),
  spec('hostId', 'host-id', () => os.hostname(), hostId, 'this Docker host; task queue keeper-<host-id>'),
  spec('temporalAddress', 'temporal-address', undefined, (raw) => (raw === '' ? undefined : raw),
    'Temporal frontend host:port; unset runs an embedded dev server', 'TEMPORAL_ADDRESS'),
  spec('namespace', 'namespace', 'default', nonEmpty, 'Temporal namespace'),
  spec('reconcileInterval', 'reconcile-interval', '30s', positiveDuration, 'how often the reconcile schedule ticks'),
  spec('eventDebounce', 'event-debounce', '250ms', positiveDuration,
    'Docker events within this long of a requested tick make one more tick, not one each'),
  spec('crashWindow', 'crash-window', '600s', positiveDuration, 'crashes are counted inside this window'),
  spec('crashThreshold', 'crash-threshold', '5', integer(1, 1000), 'crashes in the window that open the circuit'),
  spec('circuitBackoff', 'circuit-backoff', '30m,1h,4h', backoffList,
    'circuit retry delay by opening: 1st, 2nd, 3rd and later'),
  spec('recovery', 'recovery', 'restart', oneOf<RecoveryMode>('restart', 'stop'),
    'at retry time: restart the kept container, or leave the service stopped'),
  spec('escalationDecay', 'escalation-decay', '24h', positiveDuration,
    'circuit_open_count returns to 0 after this long without an opening'),
  spec('staleDeployAfter', 'stale-deploy-after', '10m', positiveDuration, '`deploying` longer than this becomes `failed`'),
  spec('staleEnvCreateAfter', 'stale-env-create-after', '5m', positiveDuration,
    'environment `creating` longer than this becomes `failed`'),
  spec('gcInterval', 'gc-interval', '5m', positiveDuration, 'how often the gc schedule sweeps'),
  spec('gcFirstDelay', 'gc-first-delay', '2m', positiveDuration, 'no sweep before this long after the worker starts'),
  spec('gcMinAge', 'gc-min-age', '10m', durationAllowingZero,
    'containers and volumes younger than this are never collected (0s turns the guard off)'),
  spec('buildDir', 'build-dir', 'data/builds', nonEmpty, 'build directories older than --build-dir-max-age are removed'),
  spec('buildDirMaxAge', 'build-dir-max-age', '1h', positiveDuration, 'age after which a build directory is removed'),
  spec('snapshotMaxPerService', 'snapshot-max-per-service', '10', integer(0),
    'snapshots kept per service, newest first (0 turns the count rule off)'),
  spec('snapshotMaxAge', 'snapshot-max-age', '30d', positiveDuration, 'snapshots older than this are removed'),
  spec('poolInterval', 'pool-interval', '60s', positiveDuration, 'how often the pool schedule refills'),
  spec('poolSize', 'pool-size', '2', integer(0, 100), 'ready containers per pooled template'),
  spec('poolMaxTotal', 'pool-max-total', '6', integer(0, 1000), 'ready containers over all templates'),
  spec('pooledTemplates', 'pooled-templates', 'default,node,python', list(),
    'templates (id or name) kept warm, in priority order'),
  spec('diskWarn', 'disk-warn', '80', percent, 'disk usage percent that logs a warning'),
  spec('diskBlock', 'disk-block', '90', percent, 'disk usage percent that blocks pool refill and deploys'),
  spec('diskPaths', 'disk-paths', '', list(), "extra paths to guard, besides the DB's directory and Docker's root"),
  spec('metricsPort', 'metrics-port', '9464', integer(0, 65535), 'Prometheus metrics port (0 turns metrics off)'),
  spec('logFormat', 'log-format', 'json', oneOf<LogFormat>('json', 'pretty'), 'log lines as JSON or for people'),
];

export type RawSettings = Partial<Record<keyof Settings, string>>;

/**
 * Resolves every setting from, in order of precedence: explicit values (flags), the environment, the default.
 * Throws SettingsError naming the first bad setting; cross-setting rules are checked last.
 */
export function loadSettings(explicit: RawSettings = {}, env: NodeJS.ProcessEnv = process.env): Settings {
  const out: Partial<Record<keyof Settings, unknown>> = {};
  for (const s of SETTINGS) {
    const fromFlag = explicit[s.key];
    const fromEnv = env[s.env];
    const raw = fromFlag ?? fromEnv ?? (typeof s.default === 'function' ? s.default() : s.default);
    const source = fromFlag !== undefined ? `--${s.flag}` : fromEnv !== undefined ? s.env : `default of --${s.flag}`;
    if (raw === undefined) {
      out[s.key] = undefined;
      continue;
    }
    try {
      out[s.key] = s.parse(raw);
    } catch (err) {
      throw new SettingsError(`invalid ${source}: ${(err as Error).message}`);
    }
  }
  const settings = out as Settings;
  if (settings.diskWarn > settings.diskBlock) {
    throw new SettingsError(
      `invalid --disk-warn: ${settings.diskWarn} is above --disk-block ${settings.diskBlock}`,
    );
  }
  return settings;
}

/** Where `npm start` serves its embedded Temporal dev server and UI; operator commands look for it there. */
export const EMBEDDED_TEMPORAL_PORT = 7233;
export const EMBEDDED_UI_PORT = 8233;

/**
 * Reconnect backoff of the Docker event watcher: the first retry, doubled per failure up to the ceiling.
 * After this many failures in a row the stream counts as unavailable (the periodic tick carries on alone).
 */
export const EVENT_RECONNECT_MIN_MS = 250;
export const EVENT_RECONNECT_MAX_MS = 15_000;
export const EVENT_UNAVAILABLE_AFTER_FAILURES = 3;
/** How long the engine may take to open the event stream before the attempt counts as failed. */
export const EVENT_CONNECT_TIMEOUT_MS = 10_000;
