import { describe, expect, it } from 'vitest';
import {
  factsOfDeaths,
  oomConfirmed,
  restartDiesOf,
  runsEndingIn,
  type ContainerEventFact,
  type RunState,
} from '../../../src/policy/deaths/facts';

const T = 1_800_000_000_000;
const exited: RunState = {
  status: 'exited',
  exitCode: 3,
  oomKilled: false,
  error: '',
  startedAtMs: T,
  finishedAtMs: T + 5_000,
  restartPolicy: 'no',
  unhealthySinceMs: null,
};
const running: RunState = { ...exited, status: 'running', exitCode: 0, startedAtMs: T + 9_000, finishedAtMs: T + 8_000 };

describe('factsOfDeaths', () => {
  it('a container down now: the inspect has it all, and its window opens a little before the recorded start', () => {
    const [f] = factsOfDeaths(1, true, exited, []);
    expect(f).toMatchObject({ seenBy: 'look', diedAtMs: T + 5_000, exitCode: 3, oomKilled: false });
    // The first lines carry a time before StartedAt; output drained after the exit may carry one after it.
    expect(f.logWindow!.sinceMs).toBeLessThan(T);
    expect(f.logWindow!.untilMs).toBeGreaterThan(T + 5_000);
  });

  it('a death Docker restarted, from its die event: the window ends at the die and never reaches the run before', () => {
    const events: ContainerEventFact[] = [
      { action: 'die', atMs: T - 300, exitCode: 1 },
      { action: 'start', atMs: T },
      { action: 'oom', atMs: T + 7_900 },
      { action: 'die', atMs: T + 8_000, exitCode: 137 },
      { action: 'start', atMs: T + 9_000 },
    ];
    const [f] = factsOfDeaths(1, false, running, events);
    expect(f).toMatchObject({ seenBy: 'event', diedAtMs: T + 8_000, exitCode: 137, oomKilled: true });
    expect(f.logWindow).toEqual({ sinceMs: T - 299, untilMs: T + 8_001 });
  });

  it('an OOM event of the run before does not make this death an OOM kill', () => {
    const events: ContainerEventFact[] = [
      { action: 'oom', atMs: T - 400 },
      { action: 'die', atMs: T - 300, exitCode: 137 },
      { action: 'start', atMs: T },
      { action: 'die', atMs: T + 8_000, exitCode: 1 },
    ];
    const facts = factsOfDeaths(2, false, running, events);
    expect(facts.map((f) => f.oomKilled)).toEqual([true, false]);
  });

  it("deaths whose events are gone: the last has the inspect's time, older ones only their number", () => {
    const facts = factsOfDeaths(3, false, running, []);
    expect(facts.map((f) => f.seenBy)).toEqual(['restart-count', 'restart-count', 'restart-count']);
    expect(facts.map((f) => f.diedAtMs)).toEqual([null, null, T + 8_000]);
    expect(facts[2].logWindow).toEqual({ sinceMs: T + 8_000 - 600_000, untilMs: T + 9_000 });
    expect(facts[2].exitCode).toBeNull();
  });

  it('no deaths, no facts', () => {
    expect(factsOfDeaths(0, true, exited, [])).toEqual([]);
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

describe('oomConfirmed: which recorded deaths a late oom event shows were OOM kills', () => {
  const deaths = [
    { id: 1, containerId: 'aaaaaaaaaaaa', diedAtMs: T },
    { id: 2, containerId: 'aaaaaaaaaaaa', diedAtMs: T + 4_000 },
    { id: 3, containerId: 'bbbbbbbbbbbb', diedAtMs: T },
  ];
  it('gives each event to the nearest death of its container it can belong to, one death per event', () => {
    expect(oomConfirmed(deaths, [{ containerId: 'aaaaaaaaaaaa' + 'f'.repeat(52), atMs: T + 4_300 }])).toEqual([2]);
    expect(
      oomConfirmed(deaths, [
        { containerId: 'aaaaaaaaaaaaffff', atMs: T + 100 },
        { containerId: 'aaaaaaaaaaaaffff', atMs: T + 4_100 },
      ]),
    ).toEqual([1, 2]);
  });
  it('confirms nothing for an event of another container, long after the death, or well before it', () => {
    expect(oomConfirmed(deaths, [{ containerId: 'cccccccccccc', atMs: T }])).toEqual([]);
    expect(oomConfirmed(deaths.slice(2), [{ containerId: 'bbbbbbbbbbbb', atMs: T + 60_000 }])).toEqual([]);
    expect(oomConfirmed(deaths.slice(2), [{ containerId: 'bbbbbbbbbbbb', atMs: T - 10_000 }])).toEqual([]);
  });
});
