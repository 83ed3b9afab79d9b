import { describe, expect, it } from 'vitest';
import { deathsAtFirstSnapshot, restartDiesOf } from '../../../src/policy/deaths/counted';
import { runsEndingIn } from '../../../src/policy/deaths/dating';
import type { ContainerEventFact, RunState } from '../../../src/policy/deaths/evidence';
import { exited, T } from './runs';

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

describe('restartDiesOf: the die events of the restarts the inspect shows', () => {
  const loop: ContainerEventFact[] = [
    { action: 'start', atMs: T },
    { action: 'die', atMs: T + 1_000, exitCode: 1 },
    { action: 'start', atMs: T + 1_100 },
    { action: 'die', atMs: T + 2_100, exitCode: 1 },
    { action: 'start', atMs: T + 2_300 },
    { action: 'die', atMs: T + 3_300, exitCode: 1 },
    { action: 'start', atMs: T + 3_700 },
  ];
  const at = (dies: ContainerEventFact[]) => dies.map((d) => d.atMs - T);
  it('the last RestartCount ones, oldest first', () => {
    const running: RunState = { ...exited, status: 'running', startedAtMs: T + 3_700, finishedAtMs: T + 3_300 };
    expect(at(restartDiesOf(running, false, loop, 2))).toEqual([2_100, 3_300]);
    expect(at(restartDiesOf(running, false, loop, 5))).toEqual([1_000, 2_100, 3_300]);
  });
  it('not a die the events read after the inspect add: one after a running container’s start', () => {
    // The inspect saw the run that started at 2.3 s; the events, read later, also have its death at 3.3 s.
    const running: RunState = { ...exited, status: 'running', startedAtMs: T + 2_300, finishedAtMs: T + 2_100 };
    expect(at(restartDiesOf(running, false, loop, 2))).toEqual([1_000, 2_100]);
  });
  it('nor one after the restart that followed a restarting container’s death', () => {
    const restarting: RunState = { ...exited, status: 'restarting', startedAtMs: T + 1_100, finishedAtMs: T + 2_100 };
    expect(at(restartDiesOf(restarting, false, loop, 2))).toEqual([1_000, 2_100]);
  });
  it("nor the die of a container that is down now: that is the look's death", () => {
    const down: RunState = { ...exited, startedAtMs: T + 2_300, finishedAtMs: T + 3_300 };
    expect(at(restartDiesOf(down, true, loop, 2))).toEqual([1_000, 2_100]);
  });
  it('each run that ended in one of them, when its start event is still there', () => {
    const events = loop.slice(1);
    expect(runsEndingIn(restartDiesOf({ ...exited, status: 'running', startedAtMs: T + 3_700 }, false, events, 3), events)).toEqual([
      1_000, 1_000,
    ]);
  });
});
