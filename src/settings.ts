/**
 * keeper's settings: every constant the loops use, each a flag `--name` and a variable (`KEEPER_NAME`, or
 * Temporal's own name where Temporal's tools read it too).
 *
 * SETTINGS is the one schema: commander turns each entry into an option with its variable (`Option.env`),
 * default and parser, so the precedence (flag, then variable, then default) and the one-line errors are
 * commander's. Cross-setting rules are checked after parsing. README's configuration table is generated from
 * SETTINGS. keeper never runs on a half-understood configuration: a bad value stops it at start.
 */
import fs from 'node:fs';
import os from 'node:os';
import { Command, InvalidArgumentError, Option } from 'commander';
import ms, { type StringValue } from 'ms';
import { firstLine } from './text';

export class SettingsError extends Error {
  override name = 'SettingsError';
}

export type RecoveryMode = 'restart' | 'stop';
export type LogFormat = 'json' | 'pretty';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Settings {
  db: string;
  hostId: string;
  /** Unset: the TEMPORAL_* variables or a temporal.toml profile decide, else keeper runs an embedded server. */
  temporalAddress: string | undefined;
  /** Unset: TEMPORAL_NAMESPACE or the profile's namespace, else `default`. */
  namespace: string | undefined;
  temporalProfile: string | undefined;
  /** A file holding the Temporal API key (instead of TEMPORAL_API_KEY); src/temporal/connection.ts reads it. */
  temporalApiKeyFile: string | undefined;
  /** Unset: a checkout's provisioned CLI, else `temporal` on PATH (src/temporal/dev-server.ts). */
  temporalCli: string | undefined;
  reconcileIntervalMs: number;
  /** How often the worker's local looks run (src/watch/): no Temporal call unless a look finds something to do. */
  reconcileLookIntervalMs: number;
  poolLookIntervalMs: number;
  gcLookIntervalMs: number;
  eventDebounceMs: number;
  crashWindowMs: number;
  crashThreshold: number;
  circuitBackoffMs: number[];
  recovery: RecoveryMode;
  escalationDecayMs: number;
  engineStopGraceMs: number;
  staleDeployAfterMs: number;
  staleEnvCreateAfterMs: number;
  gcIntervalMs: number;
  gcFirstDelayMs: number;
  gcMinAgeMs: number;
  buildDir: string;
  buildDirMaxAgeMs: number;
  snapshotMaxPerService: number;
  buildImagesPerService: number;
  snapshotMaxAgeMs: number;
  crashRecordMaxPerService: number;
  crashRecordMaxAgeMs: number;
  poolIntervalMs: number;
  poolSize: number;
  poolMaxTotal: number;
  pooledTemplates: string[];
  /** The OCI runtime of every tenant container keeper creates: `runsc` (gVisor) as ah, or `runc` knowingly. */
  tenantRuntime: string;
  /**
   * Whether --tenant-runtime or KEEPER_TENANT_RUNTIME named it. A development host (embedded Temporal) whose engine
   * lacks gVisor falls back to runc only when nobody named a runtime (src/host/tenant-runtime.ts).
   */
  tenantRuntimeGiven: boolean;
  diskWarnPercent: number;
  diskBlockPercent: number;
  diskPaths: string[];
  /** Raw, as given: `URL` or `slack:URL` (see notify/webhook.ts). Secrets may hide in them: never logged. */
  notifyWebhooks: string[];
  /** Never logged, printed or put in a workflow's history. */
  notifySecret: string | undefined;
  /** Where --notify-secret was read from instead (so it never shows in `ps`); settingsFrom reads it. */
  notifySecretFile: string | undefined;
  notifyRetryForMs: number;
  metricsPort: number;
  logFormat: LogFormat;
  logLevel: LogLevel;
  /** Unset: the local socket. Docker's own variable, as the docker CLI reads it. */
  dockerHost: string | undefined;
}

type Parser<T> = (raw: string) => T;

const invalid = (message: string): never => {
  throw new InvalidArgumentError(message);
};

/** `500ms`, `30s`, `10m`, `4h` or `30d` in milliseconds; a unit is required, so `10` is not silently 10 ms. */
export function parseDuration(text: string): number {
  const trimmed = text.trim();
  const value = /^\d+(\.\d+)?(ms|s|m|h|d)$/.test(trimmed) ? ms(trimmed as StringValue) : NaN;
  return Number.isFinite(value) ? value : invalid(`"${text}" is not a duration (use e.g. 500ms, 30s, 10m, 4h, 30d)`);
}

const positiveDuration: Parser<number> = (raw) => {
  const value = parseDuration(raw);
  return value > 0 ? value : invalid(`must be a positive duration, got "${raw}"`);
};

function integer(min: number, max = Number.MAX_SAFE_INTEGER): Parser<number> {
  return (raw) => {
    if (!/^-?\d+$/.test(raw.trim())) return invalid(`must be an integer, got "${raw}"`);
    const n = Number(raw);
    return n >= min && n <= max ? n : invalid(`must be between ${min} and ${max}, got ${n}`);
  };
}

function oneOf<T extends string>(...values: T[]): Parser<T> {
  return (raw) => ((values as string[]).includes(raw) ? (raw as T) : invalid(`must be one of ${values.join(', ')}, got "${raw}"`));
}

const nonEmpty: Parser<string> = (raw) => (raw.trim() === '' ? invalid('must not be empty') : raw);
const optional: Parser<string | undefined> = (raw) => (raw.trim() === '' ? undefined : raw);

const hostId: Parser<string> = (raw) =>
  /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/.test(raw) ? raw : invalid(`must be 1-63 letters, digits, '.', '_' or '-', got "${raw}"`);

function list<T>(item: Parser<T>): Parser<T[]> {
  return (raw) => (raw.trim() === '' ? [] : raw.split(',').map((s) => item(s.trim())));
}

const backoffList: Parser<number[]> = (raw) => (raw.trim() === '' ? invalid('needs at least one duration') : list(positiveDuration)(raw));

/** The crash settings' parsers, shared with the per-service labels (policy/service-crash-policy.ts): one syntax. */
export const crashSettingParsers = {
  crashWindowMs: positiveDuration,
  crashThreshold: integer(1, 1000),
  circuitBackoffMs: backoffList,
};

/** A runtime's name as the engine registers it (`runsc`, `runc`, `io.containerd.runc.v2`): never a path. */
const runtimeName: Parser<string> = (raw) =>
  /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/.test(raw)
    ? raw
    : invalid(`must be the name of a runtime the engine lists (letters, digits, '.', '_' or '-'), e.g. runsc or runc, got "${raw}"`);

const percent: Parser<number> = (raw) => {
  const n = Number(raw);
  return raw.trim() !== '' && Number.isFinite(n) && n >= 0 && n <= 100
    ? n
    : invalid(`must be a percentage between 0 and 100, got "${raw}"`);
};

/**
 * Webhook URLs, comma-separated (a comma inside a URL is not followed by one): http or https, optionally
 * `slack:`-prefixed. A URL can carry a token (Slack's do), so an error shows its origin at most, and it is
 * thrown as keeper's own error: commander's would quote the whole value.
 */
const webhookList: Parser<string[]> = (raw) => {
  if (raw.trim() === '') return [];
  return raw.split(/,(?=\s*(?:slack:)?https?:\/\/)/i).map((item) => {
    const text = item.trim();
    const url = text.replace(/^slack:/i, '');
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      // reported below
    }
    if (!parsed || !/^https?:$/.test(parsed.protocol) || !parsed.hostname) {
      const shown = parsed ? parsed.origin : `${text.slice(0, 8)}…`;
      throw new SettingsError(
        `invalid --notify-webhook (KEEPER_NOTIFY_WEBHOOK): must be an http:// or https:// URL, optionally prefixed with slack: (got "${shown}")`,
      );
    }
    return text;
  });
};

/** The HMAC key: never echoed, so its errors are keeper's own (commander's would quote the value). */
const secret: Parser<string | undefined> = (raw) => {
  if (raw === '') return undefined;
  if (raw.trim() !== raw || raw.length < 16) {
    throw new SettingsError(
      'invalid --notify-secret (KEEPER_NOTIFY_SECRET): must be at least 16 characters, without surrounding spaces (the value is not shown)',
    );
  }
  return raw;
};

/** Pretty for a person at a terminal (stderr, where the lines go), JSON for a log collector. */
const logFormatDefault = () => (process.stderr.isTTY ? 'pretty' : 'json');

export interface SettingSpec<K extends keyof Settings = keyof Settings> {
  key: K;
  flag: string;
  /** The variable that sets it when the flag is absent. */
  env: string;
  /** The default as an operator would type it; undefined means unset. */
  default: string | (() => string) | undefined;
  /** What the README's table says of the default when it is not a plain value. */
  defaultText?: string;
  parse: Parser<Settings[K]>;
  help: string;
  /** The flag may be given several times; the values add up (a list). */
  repeatable?: boolean;
}

function spec<K extends keyof Settings>(
  key: K,
  flag: string,
  defaultValue: SettingSpec<K>['default'],
  parse: Parser<Settings[K]>,
  help: string,
  extra: Partial<Pick<SettingSpec<K>, 'env' | 'defaultText' | 'repeatable'>> = {},
): SettingSpec<K> {
  return { key, flag, env: 'KEEPER_' + flag.toUpperCase().replace(/-/g, '_'), default: defaultValue, parse, help, ...extra };
}

/** Every setting; the README's table groups them by loop (src/cli/config-table.ts), each group in this order. */
export const SETTINGS: SettingSpec[] = [
  spec(
    'db',
    'db',
    'data/state.db',
    nonEmpty,
    'SQLite state DB (the ah schema); the worker creates it if absent, other commands refuse a missing one',
  ),
  spec('hostId', 'host-id', () => os.hostname(), hostId, 'this Docker host; task queue keeper-<host-id>', { defaultText: 'hostname' }),
  spec(
    'temporalAddress',
    'temporal-address',
    undefined,
    optional,
    "Temporal frontend host:port; wins over the profile's; unset with no profile address: an embedded dev server",
    { env: 'TEMPORAL_ADDRESS' },
  ),
  spec('namespace', 'namespace', undefined, optional, 'Temporal namespace; wins over TEMPORAL_NAMESPACE and the profile', {
    defaultText: 'default',
  }),
  spec(
    'temporalProfile',
    'temporal-profile',
    undefined,
    optional,
    'profile of temporal.toml (TEMPORAL_CONFIG_FILE, else ~/.config/temporalio/temporal.toml) to connect with',
    { env: 'TEMPORAL_PROFILE', defaultText: 'default, if the file has one' },
  ),
  spec(
    'temporalApiKeyFile',
    'temporal-api-key-file',
    undefined,
    optional,
    "file holding the Temporal API key (trailing newline stripped), so it never shows in `ps`; instead of TEMPORAL_API_KEY; wins over the profile's api_key",
  ),
  spec('temporalCli', 'temporal-cli', undefined, optional, 'the Temporal CLI that runs the embedded dev server', {
    defaultText: "(unset: a checkout's provisioned one, else temporal on PATH)",
  }),
  spec(
    'reconcileIntervalMs',
    'reconcile-interval',
    '1h',
    positiveDuration,
    "the reconcile schedule's backstop: a tick this often, besides those the event watcher and the local looks request",
  ),
  spec(
    'reconcileLookIntervalMs',
    'reconcile-look-interval',
    '10s',
    positiveDuration,
    'how often the worker looks locally (engine and DB, no Temporal call) for what a tick would do; a tick runs only when a look finds something',
  ),
  spec(
    'eventDebounceMs',
    'event-debounce',
    '250ms',
    positiveDuration,
    'Docker events within this long of a requested tick make one more tick, not one each',
  ),
  spec('crashWindowMs', 'crash-window', '600s', crashSettingParsers.crashWindowMs, 'crashes are counted inside this window'),
  spec('crashThreshold', 'crash-threshold', '5', crashSettingParsers.crashThreshold, 'crashes in the window that open the circuit'),
  spec(
    'circuitBackoffMs',
    'circuit-backoff',
    '30m,1h,4h',
    crashSettingParsers.circuitBackoffMs,
    'circuit retry delay by escalation: 1st, 2nd, 3rd and later opening since it last decayed',
  ),
  spec(
    'recovery',
    'recovery',
    'restart',
    oneOf<RecoveryMode>('restart', 'stop'),
    'at retry time: restart the kept container, or leave the service stopped',
  ),
  spec(
    'escalationDecayMs',
    'escalation-decay',
    '24h',
    positiveDuration,
    'escalation (circuit_open_count) returns to 0 after this long without an opening',
  ),
  spec(
    'engineStopGraceMs',
    'engine-stop-grace',
    '2m',
    positiveDuration,
    "a container the engine itself stopped (dockerd's shutdown, a stop outside ah) counts as a crash only if still down this long after",
  ),
  spec('staleDeployAfterMs', 'stale-deploy-after', '10m', positiveDuration, '`deploying` longer than this becomes `failed`'),
  spec(
    'staleEnvCreateAfterMs',
    'stale-env-create-after',
    '5m',
    positiveDuration,
    'environment `creating` longer than this becomes `failed`',
  ),
  spec(
    'gcIntervalMs',
    'gc-interval',
    '6h',
    positiveDuration,
    "the gc schedule's backstop: a sweep this often, besides those the local looks request",
  ),
  spec(
    'gcLookIntervalMs',
    'gc-look-interval',
    '1m',
    positiveDuration,
    'how often the worker looks locally for what a sweep would remove (a dry run); a sweep runs only when a look finds something',
  ),
  spec('gcFirstDelayMs', 'gc-first-delay', '2m', positiveDuration, 'no sweep before this long after the worker starts'),
  spec(
    'gcMinAgeMs',
    'gc-min-age',
    '10m',
    parseDuration,
    'containers and volumes younger than this are never collected (0s turns the guard off)',
  ),
  spec('buildDir', 'build-dir', 'data/builds', nonEmpty, 'build directories older than --build-dir-max-age are removed'),
  spec('buildDirMaxAgeMs', 'build-dir-max-age', '1h', positiveDuration, 'age after which a build directory is removed'),
  spec(
    'buildImagesPerService',
    'build-images-per-service',
    '3',
    integer(0, 1000),
    "tagged build images (ah's 127.0.0.1:5000/ah/<tenant>-<service>:<build>) kept per service, newest first, by GC; one a container uses is always kept (0 turns the count rule off)",
  ),
  spec(
    'snapshotMaxPerService',
    'snapshot-max-per-service',
    '10',
    integer(0),
    'snapshots kept per service, newest first (0 turns the count rule off)',
  ),
  spec('snapshotMaxAgeMs', 'snapshot-max-age', '30d', positiveDuration, 'snapshots older than this are removed'),
  spec(
    'crashRecordMaxPerService',
    'crash-record-max-per-service',
    '50',
    integer(0, 100_000),
    'crash records (keeper crashes) kept per service, newest first, by GC (0 turns the count rule off)',
  ),
  spec('crashRecordMaxAgeMs', 'crash-record-max-age', '30d', positiveDuration, 'crash records older than this are removed by GC'),
  spec(
    'poolIntervalMs',
    'pool-interval',
    '6h',
    positiveDuration,
    "the pool schedule's backstop: a refill this often, besides those claims and the local looks request",
  ),
  spec(
    'poolLookIntervalMs',
    'pool-look-interval',
    '15s',
    positiveDuration,
    'how often the worker looks locally for a pool short of its size (a claim, a dead or missing container, a failed refill, a cleared disk hold); a refill runs only when a look finds something',
  ),
  spec('poolSize', 'pool-size', '2', integer(0, 100), 'ready containers per pooled template'),
  spec('poolMaxTotal', 'pool-max-total', '6', integer(0, 1000), 'ready containers over all templates'),
  spec('pooledTemplates', 'pooled-templates', 'default,node,python', list(nonEmpty), 'templates (id or name) kept warm, in priority order'),
  spec(
    'tenantRuntime',
    'tenant-runtime',
    'runsc',
    runtimeName,
    "runtime of every tenant container keeper creates (pool, cold environments, services); the engine must list it; runc is weaker isolation than ah's gVisor",
  ),
  spec('diskWarnPercent', 'disk-warn', '80', percent, 'disk usage percent that logs a warning'),
  spec('diskBlockPercent', 'disk-block', '90', percent, 'disk usage percent that blocks pool refill and deploys'),
  spec('diskPaths', 'disk-paths', '', list(nonEmpty), "extra paths to guard, besides the DB's directory and Docker's root", {
    defaultText: '(none)',
  }),
  spec(
    'notifyWebhooks',
    'notify-webhook',
    '',
    webhookList,
    'webhook for circuit alerts (repeatable, or comma-separated); `slack:URL` for a Slack-compatible body',
    { defaultText: '(none)', repeatable: true },
  ),
  spec(
    'notifySecret',
    'notify-secret',
    undefined,
    secret,
    'at least 16 characters: signs each webhook body with HMAC-SHA256 (X-Keeper-Signature); never logged',
    { defaultText: '(unset: unsigned)' },
  ),
  spec(
    'notifySecretFile',
    'notify-secret-file',
    undefined,
    optional,
    'file holding --notify-secret (trailing newline stripped), so it never shows in `ps`; not with --notify-secret',
  ),
  spec(
    'notifyRetryForMs',
    'notify-retry-for',
    '24h',
    positiveDuration,
    'a webhook that does not answer 2xx is retried (backoff 1 s doubling to 1 min) for this long, then given up',
  ),
  spec('metricsPort', 'metrics-port', '9464', integer(0, 65535), 'Prometheus metrics port (0 turns metrics off)'),
  spec('logFormat', 'log-format', logFormatDefault, oneOf<LogFormat>('json', 'pretty'), 'log lines as JSON or for people', {
    defaultText: 'pretty on a terminal, else json',
  }),
  spec('logLevel', 'log-level', 'info', oneOf<LogLevel>('debug', 'info', 'warn', 'error'), 'the least severe log lines written'),
  spec('dockerHost', 'docker-host', undefined, optional, "the Docker engine (Docker's own variable)", {
    env: 'DOCKER_HOST',
    defaultText: '(unset: the local socket)',
  }),
];

/** The name commander gives a flag's value: `--crash-window` → `crashWindow`. */
export const optionName = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** Values as an operator types them, by option name (`{ crashWindow: '10m' }`), for `loadSettings`. */
export type RawSettings = Partial<Record<string, string>>;

const defaultOf = (s: SettingSpec) => (typeof s.default === 'function' ? s.default() : s.default);

/** The default as `--help` and README's table say it. */
export function defaultText(s: SettingSpec): string {
  if (s.defaultText !== undefined) return s.defaultText;
  if (s.default === undefined) return 'unset';
  return s.default === '' ? '(none)' : String(s.default);
}

/** The heading of the settings in every command's `--help`, after the command's own options. */
export const SETTINGS_HELP_GROUP = 'Settings (flag, else variable, else default):';

/**
 * Adds every setting to `cmd` as an option with its variable and parser, so each command takes them all. The
 * default is not commander's (it would skip the parser), so `--help` shows it in the description.
 */
export function withSettings(cmd: Command): Command {
  for (const s of SETTINGS) {
    const option = new Option(`--${s.flag} <value>`, `${s.help} (default: ${defaultText(s)})`)
      .env(s.env)
      .argParser((raw: string, previous: unknown) =>
        s.repeatable && Array.isArray(previous) ? [...previous, ...(s.parse(raw) as unknown[])] : s.parse(raw),
      );
    cmd.addOption(option.helpGroup(SETTINGS_HELP_GROUP));
  }
  return cmd;
}

/** The settings of a parsed command: its options, else the parsed defaults; then the cross-setting rules. */
export function settingsFrom(cmd: Command): Settings {
  const values = cmd.opts() as Record<string, unknown>;
  const out: Partial<Record<keyof Settings, unknown>> = {};
  for (const s of SETTINGS) {
    // commander stores '' when a parser returns undefined (an empty TEMPORAL_ADDRESS, say): that means unset.
    const given = values[optionName(s.flag)] === '' ? undefined : values[optionName(s.flag)];
    const raw = defaultOf(s);
    out[s.key] = given !== undefined ? given : raw === undefined ? undefined : parseDefault(s, raw);
  }
  out.tenantRuntimeGiven = ['cli', 'env'].includes(cmd.getOptionValueSource(optionName('tenant-runtime')) ?? '');
  return checked(withSecretFromFile(out as Settings));
}

/** The settings a parsed command was given, as a flag or a non-empty variable: the operator's own choices. */
export function givenSettings(cmd: Command): Set<keyof Settings> {
  const given = SETTINGS.filter((s) => {
    const source = cmd.getOptionValueSource(optionName(s.flag));
    return (source === 'cli' || source === 'env') && cmd.getOptionValue(optionName(s.flag)) !== '';
  });
  return new Set(given.map((s) => s.key));
}

function parseDefault(s: SettingSpec, raw: string): unknown {
  try {
    return s.parse(raw);
  } catch (err) {
    throw new SettingsError(`invalid default of --${s.flag}: ${(err as Error).message}`);
  }
}

/**
 * A secret's file, read: one line naming the flag and the path when it is missing, unreadable or empty. A
 * trailing newline (what an editor or `echo` leaves) is not part of the secret.
 */
export function readSecretFile(flag: string, env: string, file: string): string {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'does not exist'
        : code === 'EACCES'
          ? 'cannot be read (permission denied)'
          : `cannot be read (${code ?? (err as Error).message})`;
    throw new SettingsError(`invalid --${flag} (${env}): ${file} ${why}`);
  }
  const secretText = text.replace(/\r?\n$/, '');
  if (secretText === '') throw new SettingsError(`invalid --${flag} (${env}): ${file} is empty`);
  return secretText;
}

/** --notify-secret-file, read into notifySecret; giving both is a usage error. */
function withSecretFromFile(settings: Settings): Settings {
  if (settings.notifySecretFile === undefined) return settings;
  if (settings.notifySecret !== undefined) {
    throw new SettingsError('give --notify-secret (KEEPER_NOTIFY_SECRET) or --notify-secret-file (KEEPER_NOTIFY_SECRET_FILE), not both');
  }
  const text = readSecretFile('notify-secret-file', 'KEEPER_NOTIFY_SECRET_FILE', settings.notifySecretFile);
  try {
    return { ...settings, notifySecret: secret(text) };
  } catch (err) {
    throw new SettingsError(
      `${(err as Error).message.replace('--notify-secret (KEEPER_NOTIFY_SECRET)', `--notify-secret-file (${settings.notifySecretFile})`)}`,
    );
  }
}

function checked(settings: Settings): Settings {
  if (settings.diskWarnPercent > settings.diskBlockPercent) {
    throw new SettingsError(`invalid --disk-warn: ${settings.diskWarnPercent} is above --disk-block ${settings.diskBlockPercent}`);
  }
  return settings;
}

/**
 * Settings from values as typed (`{ crashWindow: '10m' }`) and an environment, through the same commander
 * options the CLI uses: tests, child processes and the demo load them this way.
 */
export function loadSettings(given: RawSettings = {}, env: NodeJS.ProcessEnv = process.env): Settings {
  const argv = Object.entries(given).flatMap(([name, value]) => {
    const s = SETTINGS.find((x) => optionName(x.flag) === name);
    if (!s) throw new SettingsError(`unknown setting ${name}`);
    return value === undefined ? [] : [`--${s.flag}=${value}`];
  });
  const cmd = withSettings(new Command('keeper'))
    .exitOverride()
    .configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  const saved = process.env;
  process.env = env; // commander reads the options' variables from process.env
  try {
    cmd.parse(argv, { from: 'user' });
  } catch (err) {
    throw new SettingsError(firstLine((err as Error).message.replace(/^error: /, '')));
  } finally {
    process.env = saved;
  }
  return settingsFrom(cmd);
}

/**
 * The process's environment, with `changes`. keeper reads it here only: SETTINGS' variables (loadSettings), and
 * what it hands on whole: Temporal's own variables and temporal.toml lookup (src/temporal/connection.ts, through
 * @temporalio/envconfig) and the environment of a keeper process it starts (the demo's worker).
 */
export function environment(changes: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { ...process.env, ...changes };
}

/** Where `npm start` serves its embedded Temporal dev server and UI; operator commands look for it there. */
export const EMBEDDED_TEMPORAL_PORT = 7233;
export const EMBEDDED_UI_PORT = 8233;
