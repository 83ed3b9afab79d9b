import { describe, expect, it } from 'vitest';
import { deathsBetween, firstSnapshotOf } from '../../../src/policy/deaths/shown';
import type { ContainerSnapshot } from '../../../src/contracts/reconcile';

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
