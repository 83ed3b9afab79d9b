import { describe, expect, it } from 'vitest';
import { restartDiesOf } from '../../../src/policy/deaths/counted';
import type { ContainerEventFact, RunState } from '../../../src/policy/deaths/evidence';
import { factsOfDeaths as factsOf } from '../../../src/policy/deaths/facts';
import { exited, T } from './runs';

/** The facts of `deaths` deaths, with the die events of their restarts as the count step matches them. */
const factsOfDeaths = (deaths: number, downNow: boolean, run: RunState, events: ContainerEventFact[]) =>
  factsOf({ deaths, downNow, restartDies: restartDiesOf(run, downNow, events, deaths - (downNow ? 1 : 0)) }, run, events);

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
