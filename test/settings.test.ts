import { describe, expect, it } from 'vitest';
import { loadSettings, parseDuration, SETTINGS, SettingsError } from '../src/settings';

describe('durations', () => {
  it.each([
    ['500ms', 500],
    ['30s', 30_000],
    ['600s', 600_000],
    ['10m', 600_000],
    ['4h', 14_400_000],
    ['30d', 2_592_000_000],
    ['1.5h', 5_400_000],
    ['0s', 0],
    [' 10m ', 600_000],
  ])('parses %j', (text, ms) => expect(parseDuration(text)).toBe(ms));

  // A bare number would be milliseconds to `ms`: a unit is required, so "10" is never 10 ms by accident.
  it.each(['', '10', 'ten minutes', '5x', '-5m', '1h 30m', '1h30m', 'm', '10 m'])('refuses %j', (text) => {
    expect(() => parseDuration(text)).toThrow(/is not a duration/);
  });
});

describe('settings', () => {
  it("has the seed's defaults", () => {
    const s = loadSettings({ hostId: 'h1' }, {});
    expect(s).toMatchObject({
      db: 'data/state.db',
      namespace: undefined,
      temporalAddress: undefined,
      temporalProfile: undefined,
      reconcileIntervalMs: 3_600_000,
      reconcileLookIntervalMs: 10_000,
      poolLookIntervalMs: 15_000,
      gcLookIntervalMs: 60_000,
      crashWindowMs: 600_000,
      crashThreshold: 5,
      circuitBackoffMs: [1_800_000, 3_600_000, 14_400_000],
      recovery: 'restart',
      escalationDecayMs: 86_400_000,
      staleDeployAfterMs: 600_000,
      staleEnvCreateAfterMs: 300_000,
      gcIntervalMs: 21_600_000,
      gcFirstDelayMs: 120_000,
      gcMinAgeMs: 600_000,
      buildDir: 'data/builds',
      buildDirMaxAgeMs: 3_600_000,
      snapshotMaxPerService: 10,
      snapshotMaxAgeMs: 2_592_000_000,
      poolIntervalMs: 21_600_000,
      poolSize: 2,
      poolMaxTotal: 6,
      pooledTemplates: ['default', 'node', 'python'],
      tenantRuntime: 'runsc',
      diskWarnPercent: 80,
      diskBlockPercent: 90,
      diskPaths: [],
      metricsPort: 9464,
      logFormat: 'json',
    });
  });

  it('reads the Docker engine from DOCKER_HOST, and the log level from KEEPER_LOG_LEVEL', () => {
    expect(loadSettings({}, { DOCKER_HOST: 'unix:///run/other.sock', KEEPER_LOG_LEVEL: 'debug' })).toMatchObject({
      dockerHost: 'unix:///run/other.sock',
      logLevel: 'debug',
    });
    expect(loadSettings({}, {})).toMatchObject({ dockerHost: undefined, logLevel: 'info' });
    expect(() => loadSettings({ logLevel: 'loud' }, {})).toThrow(/--log-level.*must be one of debug, info, warn, error, got "loud"/);
  });

  it('knows whether the tenant runtime was named, by flag or variable', () => {
    expect(loadSettings({}, {}).tenantRuntimeGiven).toBe(false);
    expect(loadSettings({ tenantRuntime: 'runsc' }, {}).tenantRuntimeGiven).toBe(true);
    expect(loadSettings({}, { KEEPER_TENANT_RUNTIME: 'runc' })).toMatchObject({ tenantRuntime: 'runc', tenantRuntimeGiven: true });
  });

  it("names every variable KEEPER_<FLAG>, except those Temporal's and Docker's own tools read", () => {
    const theirs: Record<string, string> = {
      'temporal-address': 'TEMPORAL_ADDRESS',
      'temporal-profile': 'TEMPORAL_PROFILE',
      'docker-host': 'DOCKER_HOST',
    };
    for (const s of SETTINGS) expect(s.env).toBe(theirs[s.flag] ?? 'KEEPER_' + s.flag.toUpperCase().replace(/-/g, '_'));
    expect(SETTINGS.map((s) => s.flag)).toEqual(
      expect.arrayContaining([
        'db',
        'host-id',
        'temporal-address',
        'namespace',
        'reconcile-interval',
        'crash-window',
        'crash-threshold',
        'circuit-backoff',
        'recovery',
        'escalation-decay',
        'stale-deploy-after',
        'stale-env-create-after',
        'metrics-port',
        'gc-interval',
        'gc-first-delay',
        'gc-min-age',
        'build-dir',
        'build-dir-max-age',
        'snapshot-max-per-service',
        'snapshot-max-age',
        'pool-interval',
        'pool-size',
        'pool-max-total',
        'pooled-templates',
        'disk-warn',
        'disk-block',
        'log-format',
        'temporal-profile',
        'tenant-runtime',
      ]),
    );
  });

  it('takes a flag over a variable over the default', () => {
    const env = { KEEPER_CRASH_THRESHOLD: '7', KEEPER_HOST_ID: 'from-env', TEMPORAL_ADDRESS: '10.0.0.1:7233' };
    expect(loadSettings({}, env)).toMatchObject({ crashThreshold: 7, hostId: 'from-env', temporalAddress: '10.0.0.1:7233' });
    expect(process.env.KEEPER_CRASH_THRESHOLD).toBeUndefined(); // the environment given is used, not left behind
    expect(loadSettings({ crashThreshold: '3' }, env).crashThreshold).toBe(3);
  });

  it('takes any runtime name the engine could list: runc knowingly, or a containerd shim name', () => {
    expect(loadSettings({ hostId: 'h', tenantRuntime: 'runc' }, {}).tenantRuntime).toBe('runc');
    expect(loadSettings({ hostId: 'h' }, { KEEPER_TENANT_RUNTIME: 'io.containerd.runc.v2' }).tenantRuntime).toBe('io.containerd.runc.v2');
  });

  it('accepts --gc-min-age 0s but no other zero duration', () => {
    expect(loadSettings({ hostId: 'h', gcMinAge: '0s' }, {}).gcMinAgeMs).toBe(0);
    expect(() => loadSettings({ hostId: 'h', crashWindow: '0s' }, {})).toThrow(
      "option '--crash-window <value>' argument '0s' is invalid. must be a positive duration",
    );
  });

  it.each([
    [{ crashThreshold: 'five' }, {}, `option '--crash-threshold <value>' argument 'five' is invalid. must be an integer, got "five"`],
    [{ crashThreshold: '0' }, {}, "option '--crash-threshold <value>' argument '0' is invalid. must be between 1 and 1000, got 0"],
    [
      {},
      { KEEPER_CRASH_WINDOW: '10 minutes' },
      `option '--crash-window <value>' value '10 minutes' from env 'KEEPER_CRASH_WINDOW' is invalid. "10 minutes" is not a duration`,
    ],
    [{ circuitBackoff: '30m,,4h' }, {}, "option '--circuit-backoff <value>' argument '30m,,4h' is invalid."],
    [{ recovery: 'reboot' }, {}, `option '--recovery <value>' argument 'reboot' is invalid. must be one of restart, stop, got "reboot"`],
    [{ diskBlock: '120' }, {}, "option '--disk-block <value>' argument '120' is invalid. must be a percentage between 0 and 100"],
    [{ diskWarn: '95' }, {}, 'invalid --disk-warn: 95 is above --disk-block 90'],
    [{ hostId: 'bad host' }, {}, "option '--host-id <value>' argument 'bad host' is invalid."],
    [{ snapshotMaxPerService: '-1' }, {}, "option '--snapshot-max-per-service <value>' argument '-1' is invalid."],
    [{ metricsPort: '70000' }, {}, "option '--metrics-port <value>' argument '70000' is invalid."],
    [{ logFormat: 'xml' }, {}, "option '--log-format <value>' argument 'xml' is invalid."],
    // A runtime is named as the engine lists it, never given as a path or with arguments.
    [
      { tenantRuntime: '/usr/bin/runsc' },
      {},
      `option '--tenant-runtime <value>' argument '/usr/bin/runsc' is invalid. must be the name of a runtime`,
    ],
    [{}, { KEEPER_TENANT_RUNTIME: 'runsc --network=none' }, `value 'runsc --network=none' from env 'KEEPER_TENANT_RUNTIME' is invalid.`],
    [{ tenantRuntime: '' }, {}, "option '--tenant-runtime <value>' argument '' is invalid."],
  ])('refuses %j %j with one line naming the setting', (flags, env, message) => {
    let error: unknown;
    try {
      loadSettings({ hostId: 'h', ...flags }, env);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(SettingsError);
    expect((error as Error).message).toContain(message);
    expect((error as Error).message).not.toContain('\n');
  });
});
