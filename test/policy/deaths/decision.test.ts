import { describe, expect, it } from 'vitest';
import { backoffFor, countCrashes, crashPolicy, decayedEscalation, openingAt, reachesThreshold } from '../../../src/policy/deaths/decision';
import { loadSettings } from '../../../src/settings';

const p = crashPolicy(loadSettings({ hostId: 'h' }, {}));

describe('crash policy defaults', () => {
  it("are the seed's: window 600 s, threshold 5, backoff 30m/1h/4h, decay 24 h", () => {
    expect(p).toEqual({ windowSec: 600, threshold: 5, backoffSec: [1800, 3600, 14400], decaySec: 86400 });
  });
});

describe('backoffFor (ah TestCircuitRetryBackoff)', () => {
  it.each([
    [0, 1800],
    [1, 1800],
    [2, 3600],
    [3, 14400],
    [10, 14400],
    [100, 14400],
  ])('opening %i waits %i s', (n, s) => {
    expect(backoffFor(n, p.backoffSec)).toBe(s);
  });
});

describe('countCrashes', () => {
  it('starts a window at the first crash with the deaths seen at once', () => {
    expect(countCrashes({ crashCount: 0, windowStart: null }, 3, 1000, 600)).toEqual({ crashCount: 3, windowStart: 1000 });
  });
  it('adds inside the window', () => {
    expect(countCrashes({ crashCount: 2, windowStart: 1000 }, 1, 1599, 600)).toEqual({ crashCount: 3, windowStart: 1000 });
  });
  it('starts over once the window is 600 s old', () => {
    expect(countCrashes({ crashCount: 4, windowStart: 1000 }, 1, 1600, 600)).toEqual({ crashCount: 1, windowStart: 1600 });
  });
});

describe('reachesThreshold', () => {
  it('opens at 5 inside the window, not at 4', () => {
    expect(reachesThreshold({ crashCount: 5, windowStart: 1000 }, 1100, p)).toBe(true);
    expect(reachesThreshold({ crashCount: 4, windowStart: 1000 }, 1100, p)).toBe(false);
    expect(reachesThreshold({ crashCount: 9, windowStart: 1000 }, 1600, p)).toBe(false);
  });
});

describe('escalation decay', () => {
  it('returns the open count to 0 after 24 h without an opening keeper recorded', () => {
    expect(decayedEscalation(3, 1000, 1000 + 86400, 86400)).toBe(0);
    expect(decayedEscalation(3, 1000, 1000 + 86399, 86400)).toBe(3);
  });
  it('keeps a count inherited from ah (no known opening time)', () => {
    expect(decayedEscalation(3, null, 10 ** 9, 86400)).toBe(3);
  });
  it('openingAt escalates 30m, 1h, 4h and starts over after decay', () => {
    expect(openingAt(0, null, 0, p)).toEqual({ escalation: 1, retryAt: 1800 });
    expect(openingAt(1, 0, 100, p)).toEqual({ escalation: 2, retryAt: 3700 });
    expect(openingAt(2, 0, 100, p)).toEqual({ escalation: 3, retryAt: 14500 });
    expect(openingAt(2, 0, 86400, p)).toEqual({ escalation: 1, retryAt: 88200 });
  });
});
