import { describe, expect, it } from 'vitest';
import { formatDuration, loadSettings, parseDuration, SETTINGS, SettingsError } from '../src/settings';

describe('durations', () => {
  it.each([
    ['500ms', 500], ['30s', 30_000], ['600s', 600_000], ['10m', 600_000], ['4h', 14_400_000], ['30d', 2_592_000_000],
    ['1h30m', 5_400_000], ['0s', 0],
  ])('parses %s', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['', '10', 'ten minutes', '5x', '-5m', '1h 30m', 'm'])('refuses %j', (text) => {
    expect(() => parseDuration(text)).toThrow(/is not a duration/);
  });

  it('formats what it parses', () => {
    for (const t of ['30s', '10m', '4h', '30d', '1h30m', '500ms']) expect(formatDuration(parseDuration(t))).toBe(t);
  });
});

describe('settings', () => {
  it("has the seed's defaults", () => {
    const s = loadSettings({ hostId: 'h1' }, {});
    expect(s).toMatchObject({
      db: 'data/state.db', namespace: 'default', temporalAddress: undefined,
      reconcileInterval: 30_000, crashWindow: 600_000, crashThreshold: 5,
      circuitBackoff: [1_800_000, 3_600_000, 14_400_000], recovery: 'restart', escalationDecay: 86_400_000,
      staleDeployAfter: 600_000, staleEnvCreateAfter: 300_000,
      gcInterval: 300_000, gcFirstDelay: 120_000, gcMinAge: 600_000, buildDir: 'data/builds', buildDirMaxAge: 3_600_000,
      snapshotMaxPerService: 10, snapshotMaxAge: 2_592_000_000,
      poolInterval: 60_000, poolSize: 2, poolMaxTotal: 6, pooledTemplates: ['default', 'node', 'python'],
      diskWarn: 80, diskBlock: 90, diskPaths: [], metricsPort: 9464, logFormat: 'json',
    });
  });

  it('names every variable KEEPER_<FLAG>, except TEMPORAL_ADDRESS', () => {
    for (const s of SETTINGS) {
      const expected = s.flag === 'temporal-address' ? 'TEMPORAL_ADDRESS' : 'KEEPER_' + s.flag.toUpperCase().replace(/-/g, '_');
      expect(s.env).toBe(expected);
    }
    expect(SETTINGS.map((s) => s.flag)).toEqual(expect.arrayContaining([
      'db', 'host-id', 'temporal-address', 'namespace', 'reconcile-interval', 'crash-window', 'crash-threshold',
      'circuit-backoff', 'recovery', 'escalation-decay', 'stale-deploy-after', 'stale-env-create-after', 'metrics-port',
      'gc-interval', 'gc-first-delay', 'gc-min-age', 'build-dir', 'build-dir-max-age', 'snapshot-max-per-service',
      'snapshot-max-age', 'pool-interval', 'pool-size', 'pool-max-total', 'pooled-templates', 'disk-warn', 'disk-block',
      'log-format',
    ]));
  });

  it('takes a flag over a variable over the default', () => {
    const env = { KEEPER_CRASH_THRESHOLD: '7', KEEPER_HOST_ID: 'from-env', TEMPORAL_ADDRESS: '10.0.0.1:7233' };
    expect(loadSettings({}, env)).toMatchObject({ crashThreshold: 7, hostId: 'from-env', temporalAddress: '10.0.0.1:7233' });
    expect(loadSettings({ crashThreshold: '3' }, env).crashThreshold).toBe(3);
  });

  it('accepts --gc-min-age 0s but no other zero duration', () => {
    expect(loadSettings({ hostId: 'h', gcMinAge: '0s' }, {}).gcMinAge).toBe(0);
    expect(() => loadSettings({ hostId: 'h', crashWindow: '0s' }, {})).toThrow('invalid --crash-window: must be a positive duration');
  });

  it.each([
    [{ crashThreshold: 'five' }, {}, 'invalid --crash-threshold: must be an integer, got "five"'],
    [{ crashThreshold: '0' }, {}, 'invalid --crash-threshold: must be between 1 and 1000, got 0'],
    [{}, { KEEPER_CRASH_WINDOW: '10 minutes' }, 'invalid KEEPER_CRASH_WINDOW: "10 minutes" is not a duration'],
    [{ circuitBackoff: '30m,,4h' }, {}, 'invalid --circuit-backoff:'],
    [{ recovery: 'reboot' }, {}, 'invalid --recovery: must be one of restart, stop, got "reboot"'],
    [{ diskBlock: '120' }, {}, 'invalid --disk-block: must be a percentage between 0 and 100'],
    [{ diskWarn: '95' }, {}, 'invalid --disk-warn: 95 is above --disk-block 90'],
    [{ hostId: 'bad host' }, {}, 'invalid --host-id:'],
    [{ snapshotMaxPerService: '-1' }, {}, 'invalid --snapshot-max-per-service:'],
    [{ metricsPort: '70000' }, {}, 'invalid --metrics-port:'],
    [{ logFormat: 'xml' }, {}, 'invalid --log-format:'],
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
