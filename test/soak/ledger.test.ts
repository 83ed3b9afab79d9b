/**
 * The soak's truth and ledger rules (bench/soak/truth.ts, ledger.ts), on made-up event sequences: how a container's
 * `die` events are told apart (a crash, a stop, a death in dockerd's shutdown), how Docker's RestartCount is
 * numbered and checked, which deaths keeper must count, may count, or must not, and what an alert key repeated
 * across openings looks like. Pure: no engine, no keeper.
 */
import { describe, expect, it } from 'vitest';
import { alertLedger, balances, containerLedger, isBalanced, type KeeperRecord } from '../../bench/soak/ledger';
import type { Opening } from '../../bench/soak/openings';
import type { SoakService } from '../../bench/soak/services';
import { ContainerTruth, engineWindows, LOOK_CHANCE_MS, sightMs, type EngineEvent } from '../../bench/soak/truth';

const CID = 'c'.repeat(64);
const service: SoakService = {
  index: 0,
  serviceId: 'svc-1',
  containerId: CID,
  ctlDir: '/nowhere',
  health: true,
  expectedExitCodes: [3],
  oom: false,
};
const never = () => false;
/** No dockerd restart in the run. */
const steady = engineWindows([]);

function truthOf(events: [number, string, number?][], inShutdown: (atMs: number) => boolean = never): ContainerTruth {
  const t = new ContainerTruth(CID);
  for (const [atMs, action, exitCode] of events) {
    const e: EngineEvent = {
      atMs,
      timeNano: BigInt(atMs) * 1_000_000n,
      containerId: CID,
      action,
      ...(exitCode === undefined ? {} : { exitCode }),
    };
    t.apply(e, inShutdown);
  }
  return t;
}

/** An inspect: the count, whether it runs, and its times (by default started and finished at 0: never). */
const inspect = (
  restartCount: number,
  running: boolean,
  times: { startedAtMs?: number; finishedAtMs?: number; exitCode?: number } = {},
) => ({
  restartCount,
  running,
  startedAtMs: times.startedAtMs ?? 0,
  finishedAtMs: times.finishedAtMs ?? 0,
  exitCode: times.exitCode ?? 0,
});

let recordId = 0;
function record(diedAtMs: number, fields: Partial<KeeperRecord> = {}): KeeperRecord {
  return {
    id: ++recordId,
    serviceId: 'svc-1',
    containerId: CID,
    diedAtMs,
    exitCode: 137,
    seenBy: 'event',
    datedBy: 'live',
    expected: 0,
    recordedAt: Math.floor(diedAtMs / 1000),
    ...fields,
  };
}

const opening = (o: Partial<Opening>): Opening => ({
  serviceId: 'svc-1',
  containerId: CID,
  opening: 1,
  openedAtSec: 0,
  retryAtSec: 0,
  lookRestartCount: 0,
  detectedAtMs: 0,
  ...o,
});

describe("the soak's truth: one container's events", () => {
  it('numbers policy deaths as RestartCount does, and starts again after a stop', () => {
    const t = truthOf([
      [1000, 'die', 137],
      [1100, 'start'],
      [5000, 'die', 1],
      [5300, 'start'],
      [9000, 'kill'],
      [9020, 'die', 143],
      [9030, 'stop'],
      [20_000, 'start'],
      [25_000, 'die', 137],
    ]);
    expect(t.deaths.map((d) => [d.kind, d.number, d.epoch])).toEqual([
      ['policy', 1, 0],
      ['policy', 2, 0],
      ['stop', undefined, 0],
      ['policy', 1, 1],
    ]);
    expect(t.count).toBe(1);
  });

  it("takes a kill as the cause of the next die only: a crash after keeper's restart is a crash", () => {
    const t = truthOf([
      [1000, 'kill'],
      [1020, 'die', 143],
      [1030, 'stop'],
      [1200, 'start'],
      [1200, 'restart'],
      [3000, 'die', 137],
    ]);
    expect(t.deaths.map((d) => [d.kind, d.restarted ?? false])).toEqual([
      ['stop', true],
      ['policy', false],
    ]);
    expect(t.stops).toEqual([{ atMs: 1030, restarted: true }]);
  });

  it("tells dockerd's shutdown stops from deaths of their own during it", () => {
    const t = truthOf(
      [
        [1000, 'die', 1],
        [1100, 'stop'],
        [2000, 'kill'],
        [2010, 'die', 143],
        [2020, 'stop'],
      ],
      (atMs) => atMs >= 900 && atMs <= 3000,
    );
    expect(t.deaths.map((d) => d.kind)).toEqual(['shutdown-self', 'stop']);
  });

  it("checks its numbering against the engine's RestartCount: unseen deaths are added, a lower count is its own fault", () => {
    const t = truthOf([
      [1000, 'die', 1],
      [2000, 'kill'],
      [2010, 'die', 143],
      [2020, 'stop'],
    ]);
    // dockerd started it again (its start lost with the engine's buffer) and it died twice since.
    expect(t.rebaseline(inspect(2, true, { startedAtMs: 3000 }), 9000)).toBeUndefined();
    expect(t.deaths.slice(-2).map((d) => [d.kind, d.number, d.epoch])).toEqual([
      ['unseen', 1, 1],
      ['unseen', 2, 1],
    ]);
    expect(t.rebaseline(inspect(1, true, { startedAtMs: 3000 }), 9500)).toMatch(/RestartCount 1 on the engine .*, 2 per the soak's events/);
  });

  it('takes a lower count of a container down again after a stop for a start the stream lost (seed 4102)', () => {
    // Five policy deaths, then keeper's stop; its recovery's start came while the soak's stream had lost the engine.
    const t = truthOf([
      [1000, 'die', 1],
      [2000, 'die', 1],
      [3000, 'die', 1],
      [4000, 'die', 1],
      [5000, 'die', 1],
      [5100, 'stop'],
    ]);
    expect(t.rebaseline(inspect(0, false, { startedAtMs: 6000, finishedAtMs: 7000 }), 9000)).toBeUndefined();
    expect(t.epoch).toBe(1);
    // Without a stop, a lower count is still the soak's own fault.
    const running = truthOf([
      [1000, 'die', 1],
      [2000, 'die', 1],
    ]);
    expect(running.rebaseline(inspect(0, false), 9000)).toMatch(/RestartCount 0 on the engine .*, 2 per the soak's events/);
  });

  it("starts the numbering again when dockerd exits, though the stream lost the container's stop", () => {
    const t = truthOf([
      [1000, 'die', 1],
      [2000, 'die', 1],
    ]);
    t.engineStopped(5000);
    t.apply({ atMs: 9000, timeNano: 9_000_000_000n, containerId: CID, action: 'die', exitCode: 137 }, never);
    expect(t.deaths.map((d) => [d.number, d.epoch])).toEqual([
      [1, 0],
      [2, 0],
      [1, 1],
    ]);
  });

  it('a stopped container keeps its count until it starts again', () => {
    const t = truthOf([
      [1000, 'die', 1],
      [2000, 'die', 1],
      [3000, 'kill'],
      [3010, 'die', 143],
      [3020, 'stop'],
    ]);
    expect(t.rebaseline(inspect(2, false, { startedAtMs: 2100, finishedAtMs: 3010, exitCode: 143 }), 5000)).toBeUndefined();
    expect(t.deaths.filter((d) => d.kind === 'unseen')).toEqual([]);
  });
});

describe("the soak's ledger: what keeper must count", () => {
  it('must count crashes once, record expected exits, and not count the open circuit’s last deaths nor its stop', () => {
    const t = truthOf([
      [1000, 'die', 1],
      [2000, 'die', 1],
      [3000, 'die', 3],
      [4000, 'die', 1], // after the look that opened the circuit (its RestartCount was 3)
      [4500, 'kill'],
      [4510, 'die', 143],
      [4520, 'stop'],
      [40_000, 'start'],
      [50_000, 'die', 137],
    ]);
    const o = opening({ openedAtSec: 3, lookRestartCount: 3, closedSeenAtMs: 40_500 });
    const records = [
      record(1000, { exitCode: 1 }),
      record(2000, { exitCode: 1 }),
      record(3000, { exitCode: 3, expected: 1 }),
      record(50_000),
    ];
    const c = containerLedger(service, t, [o], records, steady);
    expect(c.deaths.map((d) => d.cls)).toEqual(['crash', 'crash', 'expected', 'circuit-open', 'keeper-stop', 'crash']);
    expect(balances(c).every(isBalanced)).toBe(true);
  });

  it("ends an open circuit's last deaths at its close, when keeper's stop came after the recovery", () => {
    const t = truthOf([
      [1000, 'die', 1],
      [2000, 'die', 1],
      [11_000, 'die', 1], // after the recovery closed the circuit at 10 s
      [12_000, 'kill'], // a stop the tick decided before the recovery
      [12_010, 'die', 143],
      [12_020, 'stop'],
    ]);
    const o = opening({ openedAtSec: 2, lookRestartCount: 2, closedSeenAtMs: 10_000 });
    const c = containerLedger(service, t, [o], [record(1000), record(2000), record(11_000)], steady);
    expect(c.deaths.map((d) => d.cls)).toEqual(['crash', 'crash', 'crash', 'keeper-stop']);
    expect(balances(c).every(isBalanced)).toBe(true);
  });

  it('finds a death keeper missed, and one it counted twice', () => {
    const t = truthOf([
      [1000, 'die', 137],
      [2000, 'die', 137],
    ]);
    const missed = containerLedger(service, t, [], [record(1000)], steady);
    expect(balances(missed)[0]).toEqual({ what: 'crashes', must: 2, may: 0, keeper: 1, missed: 1, extra: 0 });
    const twice = containerLedger(service, t, [], [record(1000), record(2000), record(2000)], steady);
    expect(balances(twice)[0]).toMatchObject({ missed: 0, extra: 1 });
    // A record at the time of no death does not make up for the death it missed.
    const elsewhere = containerLedger(service, t, [], [record(1000), record(30_000)], steady);
    expect(balances(elsewhere)[0]).toMatchObject({ keeper: 2, missed: 1, extra: 1 });
    // A record spread over an interval keeper did not see carries no time: it stands for the death nearest it.
    const spread = containerLedger(service, t, [], [record(1000), record(2600, { datedBy: 'spread', seenBy: 'restart-count' })], steady);
    expect(isBalanced(balances(spread)[0])).toBe(true);
  });

  it("lets a death in dockerd's shutdown, or just before it, be counted or not, once at most; not one after it", () => {
    // dockerd's shutdown from 20 s to 30 s: a death of its own at 25 s, one at 10 s (RestartCount reset by the
    // engine's restart before keeper looked), one at 40 s after the engine was back.
    const engine = engineWindows([{ fromMs: 20_000, toMs: 30_000 }]);
    const t = truthOf(
      [
        [10_000, 'die', 1],
        [10_100, 'start'],
        [25_000, 'die', 1],
        [35_000, 'start'],
        [40_000, 'die', 137],
      ],
      engine.inShutdown,
    );
    const crashes = (records: KeeperRecord[]) => balances(containerLedger(service, t, [], records, engine))[0];
    expect(crashes([record(40_000)])).toEqual({ what: 'crashes', must: 1, may: 2, keeper: 1, missed: 0, extra: 0 });
    expect(isBalanced(crashes([record(10_000), record(25_000), record(40_000)]))).toBe(true);
    expect(isBalanced(crashes([record(10_000), record(25_000), record(40_000), record(40_000)]))).toBe(false);
    // Two records, but of the two deaths keeper may count: the one it must count is missed, not made up for.
    expect(crashes([record(10_000), record(25_000)])).toMatchObject({ keeper: 2, missed: 1, extra: 0 });
  });

  it("wants a death before dockerd's shutdown counted when keeper had LOOK_CHANCE_MS of sight in between, not only the time", () => {
    // A death 20 s before the shutdown at 60 s: with keeper watching all along it must be counted; with the engine
    // wedged from 42 s to 55 s keeper saw 7 s of it (40–42 s and 55–60 s), too little for a look.
    const shutdown = [{ fromMs: 60_000, toMs: 70_000 }];
    const t = truthOf([[40_000, 'die', 137]]);
    const crashes = (blind: { fromMs: number; toMs: number }[]) =>
      balances(containerLedger(service, t, [], [], engineWindows(shutdown, blind)))[0];
    expect(crashes([])).toMatchObject({ must: 1, may: 0, missed: 1 });
    expect(crashes([{ fromMs: 42_000, toMs: 55_000 }])).toMatchObject({ must: 0, may: 1, missed: 0 });
    expect(sightMs(40_000, 60_000, [{ fromMs: 42_000, toMs: 55_000 }])).toBe(7_000);
    // Overlapping windows are merged; windows outside the interval take nothing.
    const windows = [
      { fromMs: 45_000, toMs: 50_000 },
      { fromMs: 44_000, toMs: 48_000 },
      { fromMs: 0, toMs: 30_000 },
      { fromMs: 61_000, toMs: 90_000 },
    ];
    expect(sightMs(40_000, 60_000, windows)).toBe(14_000);
    expect(LOOK_CHANCE_MS).toBeGreaterThan(10_000); // the reconcile look's default interval, and the tick after it
  });

  it("lets a shutdown's stop that left the container down past keeper's grace be counted once or not; not one the engine undid", () => {
    // dockerd's shutdown from 20 s to 30 s stops the container at 25 s (its kill before the die).
    const engine = engineWindows([{ fromMs: 20_000, toMs: 30_000 }]);
    const stopped = () =>
      truthOf(
        [
          [24_900, 'kill'],
          [25_000, 'die', 143],
        ],
        engine.inShutdown,
      );
    const kept = stopped();
    kept.rebaseline(inspect(0, false, { finishedAtMs: 25_000, exitCode: 143 }), 25_000 + 121_000); // an inspect found it still down, the grace after
    const crashes = (t: ContainerTruth, records: KeeperRecord[]) => balances(containerLedger(service, t, [], records, engine))[0];
    expect(containerLedger(service, kept, [], [], engine).deaths.map((d) => d.cls)).toEqual(['engine-stop-kept']);
    expect(crashes(kept, [record(25_000)])).toEqual({ what: 'crashes', must: 0, may: 1, keeper: 1, missed: 0, extra: 0 });
    expect(isBalanced(crashes(kept, []))).toBe(true);
    // Down only before the grace ended (the engine started it again later): not a crash.
    const undone = stopped();
    undone.rebaseline(inspect(0, false, { finishedAtMs: 25_000, exitCode: 143 }), 25_000 + 60_000);
    expect(crashes(undone, [record(25_000)])).toMatchObject({ may: 0, extra: 1 });
  });

  it('counts an unhealthy episode keeper restarted, and lets one that ended otherwise go either way', () => {
    const t = truthOf([
      [1000, 'health_status: unhealthy'],
      [5000, 'kill'],
      [5010, 'die', 143],
      [5020, 'stop'],
      [5100, 'start'],
      [5100, 'restart'],
      [9000, 'health_status: unhealthy'],
      [9500, 'die', 137], // the process died before keeper looked
    ]);
    const c = containerLedger(service, t, [], [record(5000, { seenBy: 'health-check', exitCode: null }), record(9500)], steady);
    expect(balances(c)[2]).toEqual({ what: 'health failures', must: 1, may: 1, keeper: 1, missed: 0, extra: 0 });
    expect(balances(c).every(isBalanced)).toBe(true);
  });

  it('lets an episode the container healed of by itself go either way, and wants one still unhealthy at the end', () => {
    const t = truthOf([
      [1000, 'health_status: unhealthy'],
      [12_000, 'health_status: healthy'], // a probe that timed out on a loaded host
      [30_000, 'health_status: unhealthy'],
    ]);
    expect(balances(containerLedger(service, t, [], [], steady))[2]).toEqual({
      what: 'health failures',
      must: 1,
      may: 1,
      keeper: 0,
      missed: 1,
      extra: 0,
    });
  });

  it("counts a loop's deaths in the run dockerd began coming back after the circuit's retry time, not before it (S10)", () => {
    // Opened on the death at 5 s (RestartCount 1), retry at 40 s; dockerd's shutdown [20 s, 30 s] stops the
    // container, a stop that does not stick: the engine starts it when it is back, and the loop dies twice more.
    const loopOverRestart = (backAtMs: number) => {
      const engine = engineWindows([{ fromMs: 20_000, toMs: 30_000, backAtMs }]);
      const t = truthOf(
        [
          [5_000, 'die', 1],
          [5_500, 'start'],
          [24_900, 'kill'],
          [25_000, 'die', 143],
          [25_010, 'stop'],
        ],
        engine.inShutdown,
      );
      t.engineStopped(30_000);
      const after: [number, string, number?][] = [
        [backAtMs, 'start'],
        [backAtMs + 2000, 'die', 1],
        [backAtMs + 2500, 'start'],
        [backAtMs + 4000, 'die', 1],
      ];
      for (const [atMs, action, exitCode] of after)
        t.apply(
          { atMs, timeNano: BigInt(atMs) * 1_000_000n, containerId: CID, action, ...(exitCode ? { exitCode } : {}) },
          engine.inShutdown,
        );
      const o = opening({ openedAtSec: 5, retryAtSec: 40, lookRestartCount: 1, closedSeenAtMs: backAtMs + 10_000 });
      return (records: KeeperRecord[]) => balances(containerLedger(service, t, [o], records, engine))[0];
    };
    // Back after the retry time: the recovery under way counts the run's deaths.
    const late = loopOverRestart(60_000);
    expect(late([record(5_000), record(62_000), record(64_000)])).toMatchObject({ must: 3, missed: 0, extra: 0 });
    // Back before it: they are the open circuit's.
    const early = loopOverRestart(33_000);
    expect(early([record(5_000)])).toMatchObject({ must: 1, missed: 0, extra: 0 });
  });

  it('takes a container dockerd left in its restart backoff across its restart for no new run (run G, svc-soak-122)', () => {
    // A loop's death, then dockerd's restarts: the container stays "restarting", with its count and StartedAt of before.
    const t = truthOf([
      [500, 'start'],
      [1000, 'die', 1],
    ]);
    for (const exitedAtMs of [5000, 20_000]) {
      t.engineStopped(exitedAtMs);
      expect(t.rebaseline(inspect(1, true, { startedAtMs: 500, finishedAtMs: 1000, exitCode: 1 }), exitedAtMs + 4000)).toBeUndefined();
    }
    expect(t.deaths.map((d) => d.kind)).toEqual(['policy']);
  });

  it("finds a stop the stream never showed, after dockerd's exit, and takes it for dockerd's (run G, svc-soak-005)", () => {
    // A crash 1 s before the shutdown [20 s, 30 s]; its restart manager starts it at 25 s; it is stopped at 33 s,
    // after dockerd's exit, and not started again when dockerd is back.
    const engine = engineWindows([{ fromMs: 20_000, toMs: 30_000 }]);
    const t = truthOf(
      [
        [500, 'start'],
        [19_000, 'die', 137],
        [25_000, 'start'],
      ],
      engine.inShutdown,
    );
    t.engineStopped(30_000);
    const down = inspect(1, false, { startedAtMs: 25_000, finishedAtMs: 33_000, exitCode: 143 });
    t.rebaseline(down, 45_000);
    t.rebaseline(down, 33_000 + 121_000); // still down the grace after
    const c = containerLedger(service, t, [], [record(19_000, { exitCode: 137 }), record(33_000, { exitCode: 143 })], engine);
    expect(c.deaths.map((d) => [d.cls, d.death.atMs])).toEqual([
      ['before-shutdown', 19_000],
      ['engine-stop-kept', 33_000],
    ]);
    expect(balances(c)[0]).toEqual({ what: 'crashes', must: 0, may: 2, keeper: 2, missed: 0, extra: 0 });
  });

  it("pairs a shutdown's stop that dockerd failed to start again with keeper's record at that failed start (run J)", () => {
    // dockerd's shutdown [20 s, 30 s] stops the container at 25 s; coming back (answering at 50 s) its start fails
    // ("task already exists": exit 255 at 38 s), and the container stays down: keeper records that, once.
    const engine = engineWindows([{ fromMs: 20_000, toMs: 30_000, backAtMs: 50_000 }]);
    const t = truthOf(
      [
        [500, 'start'],
        [15_000, 'kill'],
        [25_000, 'die', 255],
      ],
      engine.inShutdown,
    );
    t.engineStopped(30_000);
    t.rebaseline(inspect(0, false, { startedAtMs: 500, finishedAtMs: 38_000, exitCode: 255 }), 25_000 + 121_000);
    const c = containerLedger(service, t, [], [record(38_000, { exitCode: 255 })], engine);
    expect(c.deaths.map((d) => d.cls)).toEqual(['engine-stop-kept']);
    expect(balances(c)[0]).toEqual({ what: 'crashes', must: 0, may: 1, keeper: 1, missed: 0, extra: 0 });
  });

  it('pairs a death whose die event dockerd logged late in its shutdown with a record at its exit (run G, svc-soak-019)', () => {
    // An OOM kill at 19.5 s, its die event at 28 s, inside the shutdown [20 s, 30 s]; keeper dates it by FinishedAt.
    const engine = engineWindows([{ fromMs: 20_000, toMs: 30_000 }]);
    const t = truthOf([[28_000, 'die', 137]], engine.inShutdown);
    const c = containerLedger(service, t, [], [record(19_500, { exitCode: 137 })], engine);
    expect(c.deaths.map((d) => d.cls)).toEqual(['shutdown-self']);
    expect(balances(c)[0]).toEqual({ what: 'crashes', must: 0, may: 1, keeper: 1, missed: 0, extra: 0 });
  });
});

describe("the soak's alert ledger", () => {
  const delivery = (key: string, retryAt: number) => ({
    headers: {},
    atMs: 0,
    body: JSON.stringify({ key, kind: 'circuit-opened', serviceId: 'svc-1', opening: 1, retryAt }),
  });

  it('wants each opening alerted under a key of its own', () => {
    const openings = [opening({ openedAtSec: 100, retryAtSec: 130 }), opening({ openedAtSec: 500, retryAtSec: 530 })];
    expect(alertLedger(openings, [delivery('k1', 130), delivery('k2', 530), delivery('k2', 530)]).problems).toEqual([]);
    // Escalation decayed between the two: an older build gave the second opening the first one's number, and its key.
    const repeated = alertLedger(openings, [delivery('k1', 130), delivery('k1', 530)]);
    expect(repeated.problems).toEqual([expect.stringMatching(/^key k1 was delivered for 2 openings/)]);
    expect(alertLedger(openings, [delivery('k1', 130)]).problems).toEqual([expect.stringMatching(/opening 1 at .* was never alerted/)]);
  });
});
