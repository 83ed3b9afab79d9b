import { describe, expect, it } from 'vitest';
import { countDatedCrashes } from '../../src/policy/crash';
import { dateDeaths, LIVE_LAG_MS } from '../../src/policy/death-dating';
import type { DeathFacts, SeenBy } from '../../src/contracts/reconcile';

const death = (seenBy: SeenBy, diedAtMs: number | null): DeathFacts => ({
  seenBy,
  diedAtMs,
  exitCode: null,
  oomKilled: null,
  engineError: '',
  logWindow: null,
});
const times = (ds: { diedAtMs: number }[]) => ds.map((d) => d.diedAtMs);
const methods = (ds: { datedBy: string }[]) => ds.map((d) => d.datedBy);

describe('dateDeaths', () => {
  const unseen = { sinceMs: 100_000, untilMs: 200_000 };

  it('keeps the time of replayed die events and run times, and says which', () => {
    const dated = dateDeaths([death('event', 110_000), death('restart-count', 120_000), death('look', 130_000)], unseen);
    expect(times(dated)).toEqual([110_000, 120_000, 130_000]);
    expect(methods(dated)).toEqual(['event', 'run-times', 'run-times']);
  });

  it('calls a death live when keeper looked within LIVE_LAG_MS of it', () => {
    const dated = dateDeaths(
      [death('event', 200_000 - LIVE_LAG_MS - 1), death('event', 200_000 - LIVE_LAG_MS), death('look', 199_000)],
      unseen,
    );
    expect(methods(dated)).toEqual(['event', 'live', 'live']);
    expect(methods(dateDeaths([death('health-check', 200_000)], unseen))).toEqual(['live']);
  });

  it('spreads deaths of unknown time evenly over the whole unseen interval when none is dated', () => {
    const dated = dateDeaths(
      [death('restart-count', null), death('restart-count', null), death('restart-count', null), death('missing', null)],
      unseen,
    );
    expect(times(dated)).toEqual([120_000, 140_000, 160_000, 180_000]);
    expect(methods(dated)).toEqual(['spread', 'spread', 'spread', 'spread']);
  });

  it('spreads undated deaths only over the gap between their dated neighbours (events rolled over: the oldest)', () => {
    const dated = dateDeaths(
      [
        death('restart-count', null),
        death('restart-count', null),
        death('event', 130_000),
        death('restart-count', null),
        death('look', 190_000),
      ],
      unseen,
    );
    expect(times(dated)).toEqual([110_000, 120_000, 130_000, 160_000, 190_000]);
    expect(methods(dated)).toEqual(['spread', 'spread', 'event', 'spread', 'live']);
  });

  it('never places a death after the look that found it, nor bunches undated ones at it', () => {
    const dated = dateDeaths([death('restart-count', null), death('event', 250_000)], unseen);
    expect(times(dated)).toEqual([150_000, 200_000]);
    expect(dated[0].diedAtMs).toBeLessThan(unseen.untilMs);
  });

  it('keeps the other facts of each death', () => {
    const [d] = dateDeaths([{ ...death('event', 130_000), exitCode: 3 }], unseen);
    expect(d).toMatchObject({ seenBy: 'event', exitCode: 3, diedAtMs: 130_000, datedBy: 'event' });
  });
});

describe('countDatedCrashes', () => {
  const policy = { windowSec: 10, threshold: 3 };
  const none = { crashCount: 0, windowStart: null };

  it('a death every 11 s never puts two in one 10 s window, however many were found at once', () => {
    const deaths = [0, 11, 22, 33, 44].map((t) => 1000 + t);
    const r = countDatedCrashes(none, deaths, policy);
    expect(r.reached).toBe(false);
    expect(r.counters).toEqual({ crashCount: 1, windowStart: 1044 });
    expect(r.windowStarts).toEqual(deaths);
  });

  it('a dense loop found after the fact reaches the threshold inside one window', () => {
    const r = countDatedCrashes(none, [1000, 1002, 1004, 1030], policy);
    expect(r.reached).toBe(true);
    // Deaths after the opening join its window: the row and the circuit's evidence are the opening's.
    expect(r.windowStarts).toEqual([1000, 1000, 1000, 1000]);
    expect(r.counters).toEqual({ crashCount: 4, windowStart: 1000 });
  });

  it('continues the window already open on the row', () => {
    expect(countDatedCrashes({ crashCount: 2, windowStart: 995 }, [1000], policy)).toMatchObject({
      reached: true,
      counters: { crashCount: 3, windowStart: 995 },
    });
    expect(countDatedCrashes({ crashCount: 2, windowStart: 980 }, [1000], policy)).toMatchObject({
      reached: false,
      counters: { crashCount: 1, windowStart: 1000 },
    });
  });

  it('deaths seen at one moment (no dates) count as before: all in the window of that moment', () => {
    expect(countDatedCrashes(none, [1000, 1000, 1000], policy).reached).toBe(true);
    expect(countDatedCrashes(none, [1000, 1000], policy).reached).toBe(false);
  });
});
