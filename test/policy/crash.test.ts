import { describe, expect, it } from 'vitest';
import {
  backoffFor,
  countCrashes,
  crashPolicy,
  deathsAtFirstSnapshot,
  deathsBetween,
  decayedEscalation,
  firstSnapshotOf,
  openingAt,
  reachesThreshold,
} from '../../src/policy/crash';
import type { ContainerSnapshot } from '../../src/contracts/reconcile';
import { loadSettings } from '../../src/settings';

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

describe('deathsBetween', () => {
  const look = (state: string, restartCount: number, containerId = 'c1'): ContainerSnapshot => ({
    containerId,
    state,
    restartCount,
    health: '',
  });
  it('counts each restart Docker made between two looks', () => {
    expect(deathsBetween(look('running', 0), look('running', 3), 0, 1000, 600)).toBe(3);
  });
  it('counts a container that is down now once, and not again while it stays down', () => {
    expect(deathsBetween(look('running', 1), look('exited', 1), 0, 1000, 600)).toBe(1);
    expect(deathsBetween(look('exited', 1), look('exited', 1), 0, 1000, 600)).toBe(0);
  });
  it('does not count the restart of a death already counted as down', () => {
    expect(deathsBetween(look('exited', 1), look('running', 2), 0, 1000, 600)).toBe(0);
    expect(deathsBetween(look('exited', 1), look('restarting', 3), 0, 1000, 600)).toBe(1);
  });
  it('reads a lower RestartCount as a manual start that reset it', () => {
    expect(deathsBetween(look('running', 7), look('running', 2), 0, 1000, 600)).toBe(2);
  });
  it("on a first look counts a recent container's restarts, but only the down state of an old one", () => {
    expect(deathsBetween(null, look('restarting', 6), 900, 1000, 600)).toBe(6);
    expect(deathsBetween(null, look('running', 6), 0, 1000, 600)).toBe(0);
    expect(deathsBetween(null, look('exited', 6), 0, 1000, 600)).toBe(1);
    expect(deathsBetween(look('running', 9, 'old'), look('exited', 0), 0, 1000, 600)).toBe(1);
  });
});

describe("keeper's first look at a container: its baseline", () => {
  const created = 1_000;
  const now = 1_100;
  const row = { status: 'running', lastCrashedAt: null, crashWindowStart: null, lastRecordedAt: null, keeperArrivedAt: null };
  it.each([
    ['a fresh row: every death since the creation counts', {}, 600, { countFromMs: 1_000_000, countsUndated: true }],
    [
      'a fresh row, a container older than the window: undated restarts stay the baseline',
      {},
      60,
      { countFromMs: 1_000_000, countsUndated: false },
    ],
    [
      "ah's crash window: deaths up to its last counted crash were counted",
      { lastCrashedAt: 1_050, crashWindowStart: 1_040 },
      600,
      { countFromMs: 1_051_000, countsUndated: false },
    ],
    [
      "keeper's own records of this container (an expected exit sets no last_crashed_at)",
      { lastRecordedAt: 1_070 },
      600,
      { countFromMs: 1_071_000, countsUndated: false },
    ],
    [
      "a container older than keeper on this DB: what came before keeper was ah's to count",
      { keeperArrivedAt: 1_030 },
      600,
      { countFromMs: 1_030_000, countsUndated: false },
    ],
    ['a container keeper has been there for', { keeperArrivedAt: 900 }, 600, { countFromMs: 1_000_000, countsUndated: true }],
    [
      "a crash counted before this container existed (its predecessor's)",
      { lastCrashedAt: 900, crashWindowStart: 890 },
      600,
      { countFromMs: 1_000_000, countsUndated: true },
    ],
    [
      'a crash column that is no time (a bad row): counted up to now, nothing is counted twice',
      { lastCrashedAt: 'soon' },
      600,
      { countFromMs: 1_101_000, countsUndated: false },
    ],
  ])('%s', (_what, fields, windowSec, expected) => {
    expect(firstSnapshotOf(created, { ...row, ...fields }, now, windowSec)).toEqual({ ...expected, rowCrashed: false });
  });
  it('knows when the row already shows the crash', () => {
    expect(firstSnapshotOf(created, { ...row, status: 'crashed' }, now, 600).rowCrashed).toBe(true);
  });
});

describe("keeper's first look at a container: its deaths", () => {
  const fresh = { countFromMs: 1_000_000, countsUndated: false, rowCrashed: false };
  const up = { now: false, atMs: null };
  const dies = [1_001_000, 1_002_100, 1_003_300, 1_004_700];
  it.each([
    ['each restart whose die event follows the creation', fresh, 4, dies, up, 4],
    ['only those after the row’s last counted crash', { ...fresh, countFromMs: 1_003_000 }, 4, dies, up, 2],
    ['more dies than restarts (a manual start reset the count): the last RestartCount ones', fresh, 2, dies, up, 2],
    ['events gone for the older restarts of an old container: the dated ones only', fresh, 6, dies, up, 4],
    ['events gone, a container created inside the window: the old rule counts them too', { ...fresh, countsUndated: true }, 6, dies, up, 6],
    ['no event at all (the engine restarted), an old container: the baseline', fresh, 6, [], up, 0],
    [
      'events gone but the dated ones already counted: the undated are older still',
      { ...fresh, countsUndated: true, countFromMs: 1_001_500 },
      6,
      dies,
      up,
      3,
    ],
    ['a container down now, with its restarts', fresh, 4, dies, { now: true, atMs: 1_006_000 }, 5],
    [
      'a container down since before a crash the row counted',
      { ...fresh, countFromMs: 1_007_000, rowCrashed: true },
      4,
      dies,
      { now: true, atMs: 1_006_000 },
      0,
    ],
    [
      'a container down since before the baseline of a row that does not show it crashed',
      { ...fresh, countFromMs: 1_007_000 },
      4,
      dies,
      { now: true, atMs: 1_006_000 },
      1,
    ],
  ])('%s', (_what, look, restartCount, dieTimes, down, deaths) => {
    expect(deathsAtFirstSnapshot(look, restartCount, dieTimes, down)).toBe(deaths);
  });
});
