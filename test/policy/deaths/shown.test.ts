import { describe, expect, it } from 'vitest';
import { countResetSinceLook, deathsBetween, deathsShown, firstSnapshotOf } from '../../../src/policy/deaths/shown';
import { exited, laterEvidence, T } from './runs';
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

describe("RestartCount set back to 0 by dockerd's start since keeper's look (S1)", () => {
  // keeper looked at T (RestartCount 1); the container runs now with RestartCount 2, its run started at T+50 s.
  const running = { ...exited, status: 'running', restartPolicy: 'unless-stopped', startedAtMs: T + 50_000, finishedAtMs: T + 49_900 };
  const at = (engineStartedAtSec: number | null | undefined) => ({
    ...laterEvidence(1, { state: 'running', restartCount: 2 }, running, 5, T / 1000 + 55),
    ...(engineStartedAtSec !== undefined && { engineStartedAtSec }),
  });
  const shownDeaths = (e: ReturnType<typeof at>) => {
    const shown = deathsShown(e);
    return shown.kind === 'deaths' ? shown.deaths : 0;
  };

  it('counts RestartCount whole when the engine started after the look and the container since the engine', () => {
    expect(countResetSinceLook(at(T / 1000 + 30))).toBe(true);
    expect(shownDeaths(at(T / 1000 + 30))).toBe(2);
  });

  it('counts the delta when the engine started before the look, in its second, or after the container; or is not known', () => {
    expect(countResetSinceLook(at(T / 1000 - 30))).toBe(false);
    expect(countResetSinceLook(at(T / 1000))).toBe(false); // the look's own second: read as after the engine's start
    expect(countResetSinceLook(at(T / 1000 + 51))).toBe(false); // the run began before it: not started by it
    expect(countResetSinceLook(at(null))).toBe(false); // no default bridge: the engine's start is unknown
    expect(countResetSinceLook(at(undefined))).toBe(false); // not read: nothing started since the look
    expect(shownDeaths(at(null))).toBe(1);
  });
});
