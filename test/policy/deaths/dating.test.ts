import { describe, expect, it } from 'vitest';
import { countDatedCrashes } from '../../../src/policy/deaths/decision';
import { dateDeaths, LIVE_LAG_MS, placeByBackoff, restartDelayMs, restartLoopOf } from '../../../src/policy/deaths/dating';
import type { DeathFacts, SeenBy } from '../../../src/contracts/reconcile';

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

describe("Docker's restart backoff", () => {
  it.each([
    [1, 100],
    [2, 200],
    [5, 1_600],
    [9, 25_600],
    [10, 51_200],
    [11, 60_000],
    [40, 60_000],
  ])('the restart after death %i of a dense loop waits %i ms', (n, ms) => {
    expect(restartDelayMs(n)).toBe(ms);
  });
});

describe('restartLoopOf: the loop the inspect and the events show', () => {
  const T = 1_800_000_000_000;
  const base = { restartCount: 9, restarts: 8, eventRunsMs: [] as number[] };
  it.each([
    [
      'restarting after a 1 s run: dense, with that run time',
      { status: 'restarting', startedAtMs: T, finishedAtMs: T + 1_000 },
      { firstDeathNumber: 2, dense: true, runMs: 1_000 },
    ],
    [
      'exited after a 12 s run: sparse',
      { status: 'exited', startedAtMs: T, finishedAtMs: T + 12_000 },
      { firstDeathNumber: 2, dense: false, runMs: 12_000 },
    ],
    [
      'the longest run shown, the events’ runs included',
      { status: 'restarting', startedAtMs: T, finishedAtMs: T + 1_000, eventRunsMs: [900, 1_400] },
      { firstDeathNumber: 2, dense: true, runMs: 1_400 },
    ],
    [
      'running, its last restart waited what an unbroken dense loop waits after death 9: dense, run time unknown',
      { status: 'running', startedAtMs: T + 26_000, finishedAtMs: T },
      { firstDeathNumber: 2, dense: true, runMs: null },
    ],
    [
      'running, its last restart came after 100 ms: a long run broke the loop, no model',
      { status: 'running', startedAtMs: T + 300, finishedAtMs: T },
      undefined,
    ],
    ['no run times at all: no model', { status: 'running', startedAtMs: null, finishedAtMs: null }, undefined],
    ['no restart among the deaths: no model', { status: 'exited', startedAtMs: T, finishedAtMs: T + 1_000, restarts: 0 }, undefined],
  ])('%s', (_what, evidence, loop) => {
    expect(restartLoopOf({ ...base, ...evidence })).toEqual(loop);
  });
});

describe('dateDeaths by the restart backoff', () => {
  const undated = (n: number) => Array.from({ length: n }, () => death('restart-count', null));
  const dense = (runMs: number | null, firstDeathNumber = 1) => ({ firstDeathNumber, dense: true, runMs });
  /** A loop of `runMs` runs from a start at 0: each death, and the next a restart delay and a run later. */
  const loopDeaths = (count: number, runMs: number, isDense = true) => {
    const out = [runMs];
    for (let n = 1; n < count; n++) out.push(out[n - 1] + (isDense ? restartDelayMs(n) : 100) + runMs);
    return out;
  };
  /** Some window of `windowSec` held `threshold` of these deaths. */
  const reached = (ms: number[], windowSec = 10, threshold = 3) =>
    countDatedCrashes(
      { crashCount: 0, windowStart: null },
      ms.map((t) => Math.floor(t / 1000)),
      { windowSec, threshold },
    ).reached;

  it("places a dense loop's deaths where Docker's backoff put them: close together early, further apart later", () => {
    const truth = loopDeaths(10, 1_000); // 1.0, 2.1, 3.3, 4.7, 6.5, 9.1, 13.3, 20.7, 34.5 and 61.1 s after the start
    const deaths = [...undated(9), death('restart-count', truth[9])];
    const unseen = { sinceMs: 0, untilMs: 200_000 };
    const dated = dateDeaths(deaths, unseen, dense(1_000));
    expect(times(dated)).toEqual(truth);
    expect(methods(dated)).toEqual([...Array(9).fill('spread'), 'run-times']);
    expect(reached(times(dated))).toBe(true);
    // An even split of the same gap puts them 6.1 s apart: no 10 s window would hold three.
    const even = times(dateDeaths(deaths, unseen));
    expect(even.slice(0, 3)).toEqual([6_110, 12_220, 18_330]);
    expect(reached(even)).toBe(false);
  });

  it('a dense loop of unknown run time between two dated deaths: the run time that fills the gap, which is the true one', () => {
    const truth = loopDeaths(9, 1_300);
    const deaths = [death('event', truth[0]), ...undated(7), death('event', truth[8])];
    expect(times(dateDeaths(deaths, { sinceMs: 0, untilMs: 120_000 }, dense(null)))).toEqual(truth);
  });

  it('a dense loop of unknown run time after a look: the longest run time that keeps them after the look, under 10 s', () => {
    const dated = dateDeaths([...undated(3), death('event', 50_000)], { sinceMs: 40_000, untilMs: 60_000 }, dense(null));
    // Delays 0.1, 0.2, 0.4 s and runs of (10 s − 0.7 s) / 3.
    expect(times(dated)).toEqual([40_000, 43_200, 46_500, 50_000]);
    const capped = dateDeaths([...undated(2), death('event', 100_000)], { sinceMs: 0, untilMs: 120_000 }, dense(null));
    // Runs under 10 s: nothing earlier than a run and a delay apart, however long the gap.
    expect(times(capped)).toEqual([79_702, 89_801, 100_000]);
  });

  it('a sparse loop (runs of 10 s or more) keeps its deaths a run and 100 ms apart', () => {
    const truth = loopDeaths(5, 11_000, false);
    const sparse = { firstDeathNumber: 1, dense: false, runMs: 11_000 };
    const dated = dateDeaths([...undated(4), death('look', truth[4])], { sinceMs: 0, untilMs: 60_000 }, sparse);
    expect(times(dated)).toEqual(truth);
    expect(reached(times(dated), 10, 2)).toBe(false);
  });

  it('places them evenly when the backoff does not fit the gap (a long run or an engine restart broke the loop)', () => {
    // Deaths 20 to 22 waited a minute each in an unbroken loop; they cannot lie inside 30 s.
    const dated = dateDeaths([...undated(3), death('event', 130_000)], { sinceMs: 100_000, untilMs: 140_000 }, dense(1_000, 20));
    expect(times(dated)).toEqual([107_500, 115_000, 122_500, 130_000]);
  });

  it('placeByBackoff numbers the deaths from the loop: the delays after deaths 4 and 5 are 0.8 and 1.6 s', () => {
    expect(placeByBackoff({ fromMs: 0, fromIsDeath: false, toMs: 10_000, numbers: [4, 5] }, dense(500, 4))).toEqual([
      10_000 - 1_600 - 500 - 800 - 500,
      10_000 - 1_600 - 500,
    ]);
  });
});
