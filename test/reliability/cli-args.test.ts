/**
 * Settings out of range or of the wrong form, given to the built CLI as a flag or as its KEEPER_* variable:
 * one line on stderr naming the setting, exit code 2, and nothing started. Every setting is tried.
 */
import { describe, expect, it } from 'vitest';
import { loadSettings, SETTINGS } from '../../src/settings';
import { keeper } from '../helpers/cli';

/** A value this setting's own parser refuses, found by trying the usual suspects. */
function badValueFor(key: string): string | undefined {
  for (const v of ['-1x', ' ', 'a,,b', '1e3', '70000', 'a/b', '0']) {
    try {
      loadSettings({ [key]: v }, {});
    } catch {
      return v;
    }
  }
  return undefined;
}

const RANGE_CASES: [string[], RegExp][] = [
  [['--crash-threshold', '0'], /invalid --crash-threshold: must be between 1 and 1000, got 0/],
  [['--crash-threshold', '1001'], /invalid --crash-threshold/],
  [['--metrics-port', '70000'], /invalid --metrics-port/],
  [['--disk-warn', '95', '--disk-block', '90'], /invalid --disk-warn: 95 is above --disk-block 90/],
  [['--disk-block', '101'], /invalid --disk-block/],
  [['--pool-size', '101'], /invalid --pool-size/],
  [['--circuit-backoff', '30m,,1h'], /invalid --circuit-backoff/],
  [['--reconcile-interval', '0s'], /invalid --reconcile-interval: must be a positive duration/],
  [['--recovery', 'maybe'], /invalid --recovery: must be one of restart, stop/],
];

async function expectOneLineError(args: string[], env: NodeJS.ProcessEnv, pattern: RegExp) {
  const r = await keeper(['reconcile', '--once', '--db', '/nonexistent/keeper-rel/state.db', ...args], env, 30_000);
  expect(r.code, `${args.join(' ')} ${JSON.stringify(env)}: ${r.stderr}`).toBe(2);
  const lines = r.stderr.trim().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
  expect(r.stdout).toBe('');
}

describe('CLI arguments and settings out of range or of the wrong form', () => {
  const settable = SETTINGS.filter((s) => s.key !== 'temporalAddress' && s.key !== 'db');

  // Every setting, in-process (each CLI start costs ~2 s of CPU): the same loadSettings the CLI calls.
  it(`every setting (${settable.length}) refuses a bad value, as a flag and as its variable, with one line naming it`, () => {
    for (const s of settable) {
      const v = badValueFor(s.key);
      expect(v, s.flag).toBeDefined();
      expect(() => loadSettings({ [s.key]: v }, {})).toThrow(new RegExp(`^invalid --${s.flag}: [^\n]+$`));
      expect(() => loadSettings({}, { [s.env]: v })).toThrow(new RegExp(`^invalid ${s.env}: [^\n]+$`));
    }
  });

  it('the built CLI: one line on stderr naming the flag or variable, exit 2, nothing on stdout', async () => {
    const flags = settable.filter((s) => ['crashThreshold', 'circuitBackoff', 'recovery', 'pooledTemplates'].includes(s.key));
    for (const s of flags) await expectOneLineError([`--${s.flag}=${badValueFor(s.key)}`], {}, new RegExp(`^keeper: invalid --${s.flag}: `));
    for (const s of settable.filter((x) => ['crashWindow', 'hostId'].includes(x.key))) {
      await expectOneLineError([], { [s.env]: badValueFor(s.key)! }, new RegExp(`^keeper: invalid ${s.env}: `));
    }
    for (const [args, pattern] of RANGE_CASES.slice(0, 4)) await expectOneLineError(args, {}, pattern);
  }, 120_000);

  it('out-of-range values and cross-setting rules name the setting', () => {
    for (const [args, pattern] of RANGE_CASES) {
      const raw: Record<string, string> = {};
      for (let i = 0; i < args.length; i += 2) raw[SETTINGS.find((s) => `--${s.flag}` === args[i])!.key] = args[i + 1];
      expect(() => loadSettings(raw, {})).toThrow(new RegExp(pattern.source.replace(/^/, '')));
    }
  });

  it('an unknown option exits 2 with the error first and a usage hint', async () => {
    const r = await keeper(['reconcile', '--once', '--bogus-flag', '1'], {}, 30_000);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toMatch(/unknown option '--bogus-flag'/);
  }, 60_000);
});
