import { describe, expect, it } from 'vitest';
import { deathsAtFirstSnapshot, deathsCounted, restartDiesOf } from '../../../src/policy/deaths/counted';
import { runsEndingIn } from '../../../src/policy/deaths/dating';
import type { ContainerEventFact, RunState } from '../../../src/policy/deaths/evidence';
import { exited, laterLook, T } from './runs';

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

describe("a restart dockerd's shutdown cancelled: its death is RestartCount's, and the look's", () => {
  // keeper looked at T (RestartCount 2); the container died at T+4 s, Docker raised the count to 3 and waited out its
  // restart delay, and dockerd's shutdown cancelled the restart: the container is down with its death in the delta.
  const evidenceAt = (events: ContainerEventFact[], restartPolicy = 'unless-stopped') => {
    const run = { ...exited, restartPolicy, startedAtMs: T - 60_000, finishedAtMs: T + 4_000 };
    const shown = laterLook(2, { state: 'exited', restartCount: 3 }, run, 0, T / 1000 + 30);
    return (e: ContainerEventFact[] = events) => deathsCounted(shown, e).deaths;
  };
  const died: ContainerEventFact = { action: 'die', atMs: T + 4_000, exitCode: 1 };

  it('counts it once, when no start followed a death since the look', () => {
    expect(evidenceAt([died])()).toBe(1);
  });
  it('counts both when the events show a restart before it (the delta is that restart)', () => {
    const restarted: ContainerEventFact[] = [{ action: 'die', atMs: T + 1_000, exitCode: 1 }, { action: 'start', atMs: T + 2_000 }, died];
    expect(evidenceAt(restarted)()).toBe(2);
  });
  it('counts both when something killed it (a stop: Docker restarts nothing and raises no count)', () => {
    expect(evidenceAt([{ action: 'kill', atMs: T + 3_500, signal: '15' }, died])()).toBe(2);
  });
  it('counts both under a policy that does not restart every exit, and when the die event is gone', () => {
    expect(evidenceAt([died], 'on-failure')()).toBe(2);
    expect(evidenceAt([])()).toBe(2);
  });
});

describe("dockerd's restart set RestartCount back to 0: the die events since the look count", () => {
  // keeper looked at T (RestartCount 1); dockerd restarted (count 0), then the container died 3 times, each restarted.
  const shownAt = (restartCount: number) => {
    const run = { ...exited, status: 'running', restartPolicy: 'unless-stopped', startedAtMs: T + 40_000, finishedAtMs: T + 39_000 };
    return laterLook(1, { state: 'running', restartCount }, run, 5, T / 1000 + 45);
  };
  const loop: ContainerEventFact[] = [
    { action: 'start', atMs: T + 20_000 },
    { action: 'die', atMs: T + 25_000, exitCode: 1 },
    { action: 'start', atMs: T + 26_000 },
    { action: 'die', atMs: T + 32_000, exitCode: 1 },
    { action: 'start', atMs: T + 33_000 },
    { action: 'die', atMs: T + 39_000, exitCode: 1 },
    { action: 'start', atMs: T + 40_000 },
  ];
  it('counts each die since the look, where the delta (3 − 1) says 2', () => {
    expect(deathsCounted(shownAt(3), loop).deaths).toBe(3);
  });
  it('not a die that something killed (a stop, a restart by keeper, the shutdown), nor one before the look', () => {
    const killed: ContainerEventFact[] = [
      { action: 'die', atMs: T - 2_000, exitCode: 1 },
      { action: 'kill', atMs: T + 31_000, signal: '15' },
      ...loop,
    ];
    expect(deathsCounted(shownAt(3), killed).deaths).toBe(2);
  });
  it('the delta alone when the engine no longer has the events', () => {
    expect(deathsCounted(shownAt(3), []).deaths).toBe(2);
  });
  it("a die after the shutdown's kill but in a run started since: that kill was the run before's (the suite's soak)", () => {
    // dockerd's shutdown killed the container at T+10 s (its die 143), dockerd started it again at T+18 s, and it died
    // by itself 8.5 s after that kill (within KILL_BEFORE_DIE_MS of it), then twice more: 3 deaths, a delta of 2.
    const afterShutdown: ContainerEventFact[] = [
      { action: 'kill', atMs: T + 10_000, signal: '15' },
      { action: 'die', atMs: T + 10_100, exitCode: 143 },
      { action: 'start', atMs: T + 14_500 },
      { action: 'die', atMs: T + 18_500, exitCode: 137 },
      ...loop.slice(2),
    ];
    expect(deathsCounted(shownAt(3), afterShutdown).deaths).toBe(3);
  });
});
