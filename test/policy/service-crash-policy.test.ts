/** Per-service crash policy from container labels: parsing, validation, fallback to the host's, expected exits. */
import { describe, expect, it } from 'vitest';
import { crashPolicy } from '../../src/policy/deaths/decision';
import { crashSettingParsers } from '../../src/settings';
import { isExpectedExit, labelCondition, labelConditions, parseExitCodes, serviceCrashPolicy } from '../../src/policy/service-crash-policy';

const host = crashPolicy({
  crashWindowMs: 600_000,
  crashThreshold: 5,
  circuitBackoffMs: [1_800_000, 3_600_000, 14_400_000],
  escalationDecayMs: 86_400_000,
});

describe('serviceCrashPolicy', () => {
  it('is the host policy when the container has no keeper labels', () => {
    expect(serviceCrashPolicy('svc1', { 'ah.service': 'svc1' }, host, crashSettingParsers)).toEqual({
      policy: host,
      expectedExitCodes: [],
      problems: [],
    });
  });

  it("applies each valid label, in the host settings' syntax", () => {
    const p = serviceCrashPolicy(
      'svc1',
      {
        'keeper.crash-threshold': '2',
        'keeper.crash-window': '90s',
        'keeper.circuit-backoff': '1m, 5m',
        'keeper.expected-exit-codes': '0,143',
      },
      host,
      crashSettingParsers,
    );
    expect(p.problems).toEqual([]);
    expect(p.policy).toEqual({ ...host, threshold: 2, windowSec: 90, backoffSec: [60, 300] });
    expect(p.expectedExitCodes).toEqual([0, 143]);
  });

  it('falls back to the host value for each bad label, with a one-line problem naming it', () => {
    const p = serviceCrashPolicy(
      'svc1',
      {
        'keeper.crash-threshold': '0',
        'keeper.crash-window': 'ten',
        'keeper.circuit-backoff': '',
        'keeper.expected-exit-codes': '0,300',
      },
      host,
      crashSettingParsers,
    );
    expect(p.policy).toEqual(host);
    expect(p.expectedExitCodes).toEqual([]);
    expect(p.problems).toEqual([
      'service svc1: label keeper.crash-threshold="0" must be between 1 and 1000, got 0; using the host\'s 5',
      'service svc1: label keeper.crash-window="ten" is not a duration (use e.g. 500ms, 30s, 10m, 4h, 30d); using the host\'s 10m',
      'service svc1: label keeper.circuit-backoff="" needs at least one duration; using the host\'s 30m,1h,4h',
      'service svc1: label keeper.expected-exit-codes="0,300" is not a list of exit codes (0-255, comma-separated, e.g. 0,143); using none: every exit counts',
    ]);
    for (const line of p.problems) expect(line).not.toContain('\n');
  });

  it('keeps the good labels when another is bad', () => {
    const p = serviceCrashPolicy('svc1', { 'keeper.crash-threshold': '3', 'keeper.crash-window': '-5m' }, host, crashSettingParsers);
    expect(p.policy.threshold).toBe(3);
    expect(p.policy.windowSec).toBe(600);
    expect(p.problems).toHaveLength(1);
  });

  it('cuts a long label value in its problem line', () => {
    const p = serviceCrashPolicy('svc1', { 'keeper.crash-window': 'x'.repeat(10_000) }, host, crashSettingParsers);
    expect(p.problems[0].length).toBeLessThan(200);
  });
});

describe('expected exits', () => {
  it('parses exit code lists and refuses anything else', () => {
    expect(parseExitCodes('0')).toEqual([0]);
    expect(parseExitCodes(' 0 , 143,0')).toEqual([0, 143]);
    for (const bad of ['', 'zero', '1,,2', '-1', '256', '1.5']) expect(() => parseExitCodes(bad)).toThrow(/not a list of exit codes/);
  });

  it('is an exit whose code is listed; an unknown exit code never is', () => {
    expect(isExpectedExit(0, [0, 143])).toBe(true);
    expect(isExpectedExit(143, [0, 143])).toBe(true);
    expect(isExpectedExit(1, [0, 143])).toBe(false);
    expect(isExpectedExit(null, [0])).toBe(false);
    expect(isExpectedExit(0, [])).toBe(false);
  });
});

describe('labelCondition', () => {
  it('is one condition per service with bad labels, none without', () => {
    expect(labelCondition('svc1', [])).toBeUndefined();
    expect(labelCondition('svc1', ['a', 'b'])).toMatchObject({ subject: 'labels:svc1', state: 'a; b', message: 'a; b' });
  });
});

describe('labelConditions', () => {
  it('reports bad labels of the services read, and leaves the others unchecked', () => {
    const { found, unchecked } = labelConditions([{ serviceId: 'svc1', problems: ['bad'] }], ['svc1', 'svc2']);
    expect(found.map((c) => c.subject)).toEqual(['labels:svc1']);
    expect(unchecked('labels:svc2')).toBe(false);
    expect(unchecked('labels:svc3')).toBe(true);
  });
});
