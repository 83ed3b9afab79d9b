/**
 * Settings out of range or of the wrong form, given to the built CLI as a flag or as its KEEPER_* variable:
 * one line on stderr naming the setting, exit code 2, and nothing started. Every setting is tried.
 */
import { describe, expect, it } from 'vitest';
import { loadSettings, optionName, SETTINGS } from '../../src/settings';
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
  [['--crash-threshold', '0'], /option '--crash-threshold <value>' argument '0' is invalid\. must be between 1 and 1000, got 0/],
  [['--crash-threshold', '1001'], /option '--crash-threshold <value>' argument '1001' is invalid/],
  [['--metrics-port', '70000'], /option '--metrics-port <value>' argument '70000' is invalid/],
  [['--disk-warn', '95', '--disk-block', '90'], /invalid --disk-warn: 95 is above --disk-block 90/],
  [['--disk-block', '101'], /option '--disk-block <value>' argument '101' is invalid/],
  [['--pool-size', '101'], /option '--pool-size <value>' argument '101' is invalid/],
  [['--circuit-backoff', '30m,,1h'], /option '--circuit-backoff <value>' argument '30m,,1h' is invalid/],
  [['--reconcile-interval', '0s'], /option '--reconcile-interval <value>' argument '0s' is invalid\. must be a positive duration/],
  [['--recovery', 'maybe'], /option '--recovery <value>' argument 'maybe' is invalid\. must be one of restart, stop/],
];

async function expectOneLineError(args: string[], env: NodeJS.ProcessEnv, pattern: RegExp) {
  const r = await keeper(['reconcile', '--once', '--db', '/nonexistent/keeper-rel/state.db', ...args], env, 30_000);
  expect(r.code, `${args.join(' ')} ${JSON.stringify(env)}: ${r.stderr}`).toBe(2);
  const lines = r.stderr.trim().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
  expect(r.stdout).toBe('');
}

/** Settings whose values can carry a token (or name its file): their errors are keeper's own, since commander's quote the value. */
const HOLDS_SECRETS = ['notifyWebhooks', 'notifySecret', 'notifySecretFile'];

describe('CLI arguments and settings out of range or of the wrong form', () => {
  // The optional Temporal ones, the Temporal CLI's path and DOCKER_HOST take any text (unset when empty): the
  // connection, or the spawn of the CLI, checks them.
  const settable = SETTINGS.filter(
    (s) => !['temporalAddress', 'temporalProfile', 'temporalApiKeyFile', 'temporalCli', 'namespace', 'db', 'dockerHost'].includes(s.key),
  );
  const name = (s: (typeof SETTINGS)[number]) => optionName(s.flag);

  // Every setting, in-process (each CLI start costs ~2 s of CPU): the same loadSettings the CLI calls.
  it(`every setting (${settable.length}) refuses a bad value, as a flag and as its variable, with one line naming it`, () => {
    for (const s of settable) {
      const v = badValueFor(name(s));
      expect(v, s.flag).toBeDefined();
      if (HOLDS_SECRETS.includes(s.key)) {
        // Never quoted whole: the line names the flag and the variable, and shows no secret.
        const line = new RegExp(`^invalid --${s.flag} \\(${s.env}\\): [^\n]+$`);
        expect(() => loadSettings({ [name(s)]: v }, {})).toThrow(line);
        expect(() => loadSettings({}, { [s.env]: v })).toThrow(line);
        continue;
      }
      expect(() => loadSettings({ [name(s)]: v }, {})).toThrow(
        new RegExp(`^option '--${s.flag} <value>' argument '.*' is invalid\\. [^\n]+$`),
      );
      expect(() => loadSettings({}, { [s.env]: v })).toThrow(
        new RegExp(`^option '--${s.flag} <value>' value '.*' from env '${s.env}' is invalid\\. [^\n]+$`),
      );
    }
  });

  it('the built CLI: one line on stderr naming the flag or variable, exit 2, nothing on stdout', async () => {
    const flags = settable.filter((s) => ['crashThreshold', 'circuitBackoffMs', 'recovery', 'pooledTemplates'].includes(s.key));
    for (const s of flags)
      await expectOneLineError([`--${s.flag}=${badValueFor(name(s))}`], {}, new RegExp(`^keeper: option '--${s.flag} <value>' argument `));
    for (const s of settable.filter((x) => ['crashWindowMs', 'hostId'].includes(x.key))) {
      await expectOneLineError(
        [],
        { [s.env]: badValueFor(name(s))! },
        new RegExp(`^keeper: option '--${s.flag} <value>' value .* from env '${s.env}' is invalid`),
      );
    }
    for (const [args, pattern] of RANGE_CASES.slice(0, 4)) await expectOneLineError(args, {}, pattern);
  }, 120_000);

  it('out-of-range values and cross-setting rules name the setting', () => {
    for (const [args, pattern] of RANGE_CASES) {
      const raw: Record<string, string> = {};
      for (let i = 0; i < args.length; i += 2) raw[optionName(args[i].slice(2))] = args[i + 1];
      expect(() => loadSettings(raw, {})).toThrow(new RegExp(pattern.source.replace(/^/, '')));
    }
  });

  it('an unknown option exits 2 with one line naming it', async () => {
    const r = await keeper(['reconcile', '--once', '--bogus-flag', '1'], {}, 30_000);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^keeper: unknown option '--bogus-flag'/)]);
  }, 60_000);
});
