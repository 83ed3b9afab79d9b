/**
 * The local looks' runner and the run requests (src/sensors/), in milliseconds: looks are functions the test sets,
 * Temporal is a function that takes or refuses a request. That the looks run in a worker against a real engine and
 * a real Temporal server is tested in test/sensors/.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { NOTHING_FOUND, type ContainerChange, type Finding } from '../../src/host/looks/finding';
import type { LoopName } from '../../src/ids';
import { silentLogger } from '../../src/log';
import { ASK_RULES } from '../../src/policy/look-asks';
import { LoopRequester, type FailingRequest } from '../../src/sensors/requests';
import { isPermanentRefusal } from '../../src/temporal/operations';
import { ScheduleNotFoundError, ServiceError } from '@temporalio/client';
import { Sensors, STOP_WAIT_MS, type EventWitness, type LookOutcome, type LoopLook } from '../../src/sensors/sensors';
import { EngineView } from '../../src/host/engine-view';
import { EventHints } from '../../src/host/event-hints';
import { waitFor } from '../helpers/fixtures';
import { MemoryEngine } from '../helpers/memory-engine';

/** The looks here are functions: they read no engine. */
const noEngine = () => new EngineView({ listContainerUsage: async () => [] });
let nowMs = 1_000_000;
const clock = { nowMs: () => nowMs };
const stopAfter: { stop(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const s of stopAfter.splice(0)) await s.stop();
});

function sensorsWith(
  finding: () => Finding,
  opts: { witness?: EventWitness; lastRunAtMs?: () => number | undefined; hints?: EventHints } = {},
) {
  const asks: { loop: LoopName; why: string; serviceId?: string }[] = [];
  const sensors = new Sensors({
    looks: [{ loop: 'reconcile', everyMs: 60_000, look: async () => finding() }],
    view: noEngine,
    ask: async (loop, why, serviceId) => void asks.push({ loop, why, serviceId }),
    lastRunFinishedAtMs: () => opts.lastRunAtMs?.(),
    witness: opts.witness,
    passedOver: opts.hints && ((changeAtMs, lookStartedMs) => opts.hints!.passedOver(changeAtMs, lookStartedMs)),
    log: silentLogger,
    clock,
  });
  return { sensors, asks };
}

const crash = (atMs: number): Finding => ({
  items: ['crash:s1@exited/0'],
  serviceId: 's1',
  changes: [{ containerId: 'c1', atMs, item: 'crash:s1@exited/0' }],
});

describe('the local looks', () => {
  it('ask once for what they find, and again only after a run left it undone and the backoff passed', async () => {
    const run: { finishedAtMs?: number } = {};
    const found = (): Finding => ({ items: ['stale-deploy:s2'], serviceId: 's2', changes: [] });
    const { sensors, asks } = sensorsWith(found, { lastRunAtMs: () => run.finishedAtMs });
    await sensors.lookNow('reconcile');
    expect(asks).toEqual([{ loop: 'reconcile', why: 'local look: stale-deploy:s2', serviceId: 's2' }]);
    nowMs += 10_000;
    await sensors.lookNow('reconcile');
    expect(asks).toHaveLength(1);
    run.finishedAtMs = nowMs; // the run came and did not do it
    nowMs += ASK_RULES.firstBackoffMs;
    await sensors.lookNow('reconcile');
    expect(asks).toHaveLength(2);
  });

  it('leave a death to the event path when its event arrived, and reopen a stream that said nothing of it', async () => {
    const verdict = { v: 'explained' as 'explained' | 'missed' };
    const missed: ContainerChange[][] = [];
    const witness: EventWitness = { account: () => verdict.v, startLookPending: false, streamMissed: (c) => void missed.push(c) };
    const { sensors, asks } = sensorsWith(() => crash(nowMs - 6_000), { witness });
    await sensors.lookNow('reconcile');
    expect(asks).toEqual([]);

    verdict.v = 'missed';
    const other = sensorsWith(() => crash(nowMs - 6_000), { witness });
    await other.sensors.lookNow('reconcile');
    expect(other.asks).toHaveLength(1);
    expect(missed).toEqual([[{ containerId: 'c1', atMs: nowMs - 6_000, item: 'crash:s1@exited/0' }]]);
  });

  it('never leave a death to an event path that passed over it: a run begun after its event finished, and the death is still there', async () => {
    const witness: EventWitness = { account: () => 'explained', startLookPending: false, streamMissed: () => undefined };
    const hints = new EventHints();
    const diedAtMs = nowMs - 2_000;
    const { sensors, asks } = sensorsWith(() => crash(diedAtMs), { witness, hints });
    // A run that began before the death (its observation is older than the event): the event's own run is still to come.
    hints.notePass({ observedFromMs: diedAtMs - 50, finishedAtMs: nowMs - 1_000 });
    await sensors.lookNow('reconcile');
    expect(asks).toEqual([]);
    // The event's run began 14 ms after the death and finished; the death is still there: asked for at once.
    hints.notePass({ observedFromMs: diedAtMs + 14, finishedAtMs: nowMs - 500 });
    await sensors.lookNow('reconcile');
    expect(asks).toEqual([{ loop: 'reconcile', why: 'local look: crash:s1@exited/0', serviceId: 's1' }]);
  });

  it('run the looks due at the same moment together, over one list of the engine', async () => {
    let lists = 0;
    const views: Record<'reconcile' | 'pool', EngineView[]> = { reconcile: [], pool: [] };
    const lookEvery = (loop: 'reconcile' | 'pool', everyMs: number): LoopLook => ({
      loop,
      everyMs,
      look: async (view) => {
        views[loop].push(view);
        await view.containers();
        return NOTHING_FOUND;
      },
    });
    const sensors = new Sensors({
      looks: [lookEvery('reconcile', 40), lookEvery('pool', 80)],
      view: () => new EngineView({ listContainerUsage: async () => (lists++, []) }),
      ask: async () => undefined,
      lastRunFinishedAtMs: () => undefined,
      log: silentLogger,
      clock,
    });
    stopAfter.push(sensors);
    sensors.start();
    await waitFor('four pool looks', () => views.pool.length >= 4, 20_000, 5);
    await sensors.stop();
    // The pool's grid (every 80 ms) meets the reconcile's (every 40 ms) at each of its looks, late timers or not.
    for (const v of views.pool) expect(views.reconcile).toContain(v);
    expect(lists).toBe(sensors.rounds);
    expect(lists).toBe(new Set(views.reconcile).size);
    expect(views.reconcile.length + views.pool.length).toBeGreaterThan(lists);
  });

  it('say when a look fails, once, and go on looking; each look is kept for keeper status', async () => {
    let fail = true;
    const lines: string[] = [];
    const kept: LookOutcome[] = [];
    const log = { ...silentLogger, warn: (m: string) => void lines.push(m), info: (m: string) => void lines.push(m), child: () => log };
    const sensors = new Sensors({
      record: (loop, outcome) => {
        kept.push(outcome);
        if (kept.length === 1) throw new Error('database is locked'); // keeping it failed: the looks go on
      },
      looks: [
        { loop: 'gc', everyMs: 60_000, look: async () => (fail ? Promise.reject(new Error('engine down')) : { items: [], changes: [] }) },
      ],
      view: noEngine,
      ask: async () => undefined,
      lastRunFinishedAtMs: () => undefined,
      log,
      clock,
    });
    expect(await sensors.lookNow('gc')).toMatchObject({ error: 'engine down' });
    await sensors.lookNow('gc');
    fail = false;
    await sensors.lookNow('gc');
    expect(lines).toEqual([
      'local look failed; the next one tries again',
      'local look not recorded for keeper status',
      'local look works again',
    ]);
    expect(kept).toEqual([
      { items: [], asked: false, error: 'engine down' },
      { items: [], asked: false, error: 'engine down' },
      { items: [], asked: false },
    ]);
  });
});

describe('a look that cannot finish', () => {
  it('is recorded failing at its deadline, and the next round looks anew instead of joining it', async () => {
    const kept: LookOutcome[] = [];
    const hung = new Promise<Finding>(() => undefined); // what no deadline of the engine's ends
    let looks = 0;
    const sensors = new Sensors({
      looks: [{ loop: 'reconcile', everyMs: 20, deadlineMs: 100, look: async () => (++looks === 1 ? hung : NOTHING_FOUND) }],
      view: noEngine,
      ask: async () => undefined,
      lastRunFinishedAtMs: () => undefined,
      record: (_loop, outcome) => void kept.push(outcome),
      log: silentLogger,
      clock,
    });
    stopAfter.push(sensors);
    sensors.start();
    await waitFor('a look after the hung one', () => kept.length >= 2, 20_000, 5);
    await sensors.stop();
    expect(kept[0]).toEqual({ items: [], asked: false, error: 'the look did not finish within 0.1 s' });
    expect(kept[1]).toEqual({ items: [], asked: false });
    expect(sensors.stats.get('reconcile')).toMatchObject({ failed: 1, abandoned: 1 });
  });

  it("fails with the engine's own line when a call of the round's view runs out its deadline, and works again once the engine answers", async () => {
    const engine = new MemoryEngine();
    engine.deadlineMs = 50;
    engine.wedge();
    const kept: LookOutcome[] = [];
    const sensors = new Sensors({
      looks: [{ loop: 'pool', everyMs: 60_000, look: async (view) => (await view.containers(), NOTHING_FOUND) }],
      view: () => new EngineView(engine),
      ask: async () => undefined,
      lastRunFinishedAtMs: () => undefined,
      record: (_loop, outcome) => void kept.push(outcome),
      log: silentLogger,
      clock,
    });
    expect(await sensors.lookNow('pool')).toEqual({
      items: [],
      asked: false,
      error: 'docker container.list: the engine did not answer within 0.05 s',
    });
    engine.release();
    expect(await sensors.lookNow('pool')).toEqual({ items: [], asked: false });
    expect(kept).toHaveLength(2);
  });

  it('that saw part of the host asks for what it found, and is recorded failing', async () => {
    const kept: LookOutcome[] = [];
    const asks: string[] = [];
    const partly: Finding = { items: ['gc-containers:c1'], changes: [], failed: 'gc class volumes: down' };
    const sensors = new Sensors({
      looks: [{ loop: 'gc', everyMs: 60_000, look: async () => partly }],
      view: noEngine,
      ask: async (_loop, why) => void asks.push(why),
      lastRunFinishedAtMs: () => undefined,
      record: (_loop, outcome) => void kept.push(outcome),
      log: silentLogger,
      clock,
    });
    await sensors.lookNow('gc');
    expect(asks).toEqual(['local look: gc-containers:c1']);
    expect(kept).toEqual([{ items: ['gc-containers:c1'], asked: true, error: 'gc class volumes: down' }]);
    expect(sensors.stats.get('gc')).toMatchObject({ failed: 1, asked: 1 });
  });

  it("does not hold up stop past its wait (a worker's shutdown)", async () => {
    const sensors = new Sensors({
      stopWaitMs: 200,
      looks: [{ loop: 'gc', everyMs: 60_000, look: () => new Promise<Finding>(() => undefined) }],
      view: noEngine,
      ask: async () => undefined,
      lastRunFinishedAtMs: () => undefined,
      log: silentLogger,
      clock,
    });
    void sensors.lookNow('gc');
    const startedAt = performance.now();
    await sensors.stop();
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(190);
    expect(performance.now() - startedAt).toBeLessThan(STOP_WAIT_MS);
  });
});

describe('run requests', () => {
  it('are kept and sent again until Temporal takes them; requests meanwhile join the one waiting', async () => {
    let refusals = 3;
    const sent: string[] = [];
    const requester = new LoopRequester({
      loop: 'reconcile',
      log: silentLogger,
      retry: { minMs: 5, maxMs: 20 },
      send: async (why) => {
        sent.push(why);
        if (refusals-- > 0) throw new Error('14 UNAVAILABLE: connection refused');
        return true;
      },
    });
    stopAfter.push(requester);
    const first = requester.request('docker event');
    const second = requester.request('local look: crash:s1');
    expect(await first).toBe('taken');
    expect(await second).toBe('taken');
    expect(sent).toEqual(['docker event', 'docker event', 'docker event', 'docker event']);
    expect(requester.stats).toEqual({ taken: 1, declined: 0, failedAttempts: 3, refusedAttempts: 0 });
    expect(await requester.request('later')).toBe('taken');
  });

  it('tell a refusal for good from a miss, say it at warn when it starts and again every few minutes, and keep it until taken', async () => {
    const lines: { level: string; msg: string; refused?: boolean }[] = [];
    const log = {
      ...silentLogger,
      debug: (msg: string) => void lines.push({ level: 'debug', msg }),
      info: (msg: string) => void lines.push({ level: 'info', msg }),
      warn: (msg: string) => void lines.push({ level: 'warn', msg }),
      child: () => log,
    };
    const kept: (FailingRequest | undefined)[] = [];
    let answer: 'refuse' | 'miss' | 'take' = 'refuse';
    const requester = new LoopRequester({
      loop: 'reconcile',
      log,
      clock,
      retry: { minMs: 5, maxMs: 5 },
      refusedRetry: { minMs: 5, maxMs: 5 },
      isPermanent: (err) => (err as Error).message.startsWith('schedule not found'),
      onFailing: (f) => void kept.push(f && { ...f }),
      send: async () => {
        nowMs += 60_000; // each attempt a minute after the last, on the test's clock
        if (answer === 'take') return true;
        throw new Error(answer === 'refuse' ? 'schedule not found: keeper-h-reconcile' : '14 UNAVAILABLE: connection refused');
      },
    });
    stopAfter.push(requester);
    const startedMs = nowMs;
    const taken = requester.request('local look: crash:s1');
    await waitFor('seven refused attempts', () => requester.stats.refusedAttempts >= 7, 5_000, 1);
    answer = 'miss';
    await waitFor('a missed attempt', () => requester.stats.failedAttempts > requester.stats.refusedAttempts, 5_000, 1);
    answer = 'take';
    expect(await taken).toBe('taken');

    const warned = lines.filter((l) => l.level === 'warn').map((l) => l.msg);
    // The refusal at once, again 5 minutes later (never only once, never each minute), and the miss when it changed.
    expect(warned).toEqual([
      expect.stringMatching(/^Temporal refused a run request/),
      expect.stringMatching(/^Temporal refused a run request/),
      'Temporal did not take a run request; kept and sent again until it does',
    ]);
    expect(lines.filter((l) => l.level === 'debug').length).toBeGreaterThanOrEqual(5);
    expect(kept[0]).toEqual({
      why: 'local look: crash:s1',
      sinceMs: startedMs + 60_000,
      attempts: 1,
      error: 'schedule not found: keeper-h-reconcile',
      refused: true,
    });
    expect(kept.at(-2)).toMatchObject({ sinceMs: startedMs + 60_000, refused: false, error: '14 UNAVAILABLE: connection refused' });
    expect(kept.at(-1)).toBeUndefined(); // taken: nothing failing is kept
    expect(requester.failingRequest).toBeUndefined();
  });

  it("read Temporal's refusals for good: a missing schedule, NOT_FOUND, INVALID_ARGUMENT, PERMISSION_DENIED; not UNAVAILABLE", () => {
    const grpc = (code: number) => Object.assign(new Error(`${code} grpc`), { code, details: 'grpc', metadata: {} });
    const wrapped = (code: number) => new ServiceError('the service said no', { cause: grpc(code) });
    expect(isPermanentRefusal(new ScheduleNotFoundError('schedule not found', 'keeper-h-reconcile'))).toBe(true);
    expect([5, 3, 7, 16].map((code) => isPermanentRefusal(wrapped(code)))).toEqual([true, true, true, true]);
    expect([14, 4, 8, 13].map((code) => isPermanentRefusal(wrapped(code)))).toEqual([false, false, false, false]);
    expect(isPermanentRefusal(new Error('connect ECONNREFUSED 127.0.0.1:7233'))).toBe(false);
  });

  it('end as declined when the loop is paused, and as stopped when the worker stops', async () => {
    const paused = new LoopRequester({ loop: 'pool', log: silentLogger, send: async () => false });
    expect(await paused.request('pool short')).toBe('declined');
    const down = new LoopRequester({ loop: 'gc', log: silentLogger, send: () => Promise.reject(new Error('unavailable')) });
    const waiting = down.request('orphan');
    await waitFor('a first attempt', () => down.stats.failedAttempts > 0, 5_000, 5);
    await down.stop();
    expect(await waiting).toBe('stopped');
  });
});
