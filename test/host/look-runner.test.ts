/**
 * The looks' runner and the run requests (src/watch/), in milliseconds: looks are functions the test sets, Temporal is
 * a function that takes or refuses a request. That the looks run in a worker against a real engine and a real
 * Temporal server is tested in test/watch/.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { NOTHING_FOUND, type Finding, type FoundItem } from '../../src/watch/finding';
import { silentLogger } from '../../src/log';
import { REQUEST_RULES } from '../../src/watch/request-rules';
import { LoopRequester, type FailingRequest } from '../../src/watch/requests';
import { isPermanentRefusal } from '../../src/temporal/operations';
import { ScheduleNotFoundError, ServiceError } from '@temporalio/client';
import { LookRunner, STOP_WAIT_MS, type Coverage, type EventPath, type LookOutcome, type LoopLook } from '../../src/watch/look-runner';
import { EngineView } from '../../src/watch/engine-view';
import { EventHints } from '../../src/watch/event-hints';
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

function runnerWith(
  finding: () => Finding,
  opts: { eventPath?: EventPath; lastRunAtMs?: () => number | undefined; hints?: EventHints } = {},
) {
  const requested: { loop: string; why: string; serviceId?: string }[] = [];
  const runner = new LookRunner({
    looks: [{ loop: 'reconcile', everyMs: 60_000, look: async () => finding() }],
    view: noEngine,
    request: async (loop, why, serviceId) => void requested.push({ loop, why, serviceId }),
    lastRunFinishedAtMs: () => opts.lastRunAtMs?.(),
    eventPath: opts.eventPath,
    passedOver: opts.hints && ((changeAtMs, lookStartedMs) => opts.hints!.passedOver(changeAtMs, lookStartedMs)),
    log: silentLogger,
    clock,
  });
  return { runner, requested };
}

/** An event path that says `coverage` of every change, with a start request pending or not. */
function pathSaying(coverage: { v: Coverage }, startRequestPending = false, missed: FoundItem[][] = []): EventPath {
  return { coverage: () => coverage.v, startRequestPending, streamMissed: (items) => void missed.push(items) };
}

const crash = (atMs: number): Finding => ({
  items: [{ key: 'crash:s1@exited/0', change: { containerId: 'c1', atMs } }],
  serviceId: 's1',
});

describe('the local looks', () => {
  it('request a run once for what they find, and again only after a run left it undone and the backoff passed', async () => {
    const run: { finishedAtMs?: number } = {};
    const found = (): Finding => ({ items: [{ key: 'stale-deploy:s2' }], serviceId: 's2' });
    const { runner, requested } = runnerWith(found, { lastRunAtMs: () => run.finishedAtMs });
    await runner.lookNow('reconcile');
    expect(requested).toEqual([{ loop: 'reconcile', why: 'local look: stale-deploy:s2', serviceId: 's2' }]);
    nowMs += 10_000;
    await runner.lookNow('reconcile');
    expect(requested).toHaveLength(1);
    run.finishedAtMs = nowMs; // the run came and did not do it
    nowMs += REQUEST_RULES.firstBackoffMs;
    await runner.lookNow('reconcile');
    expect(requested).toHaveLength(2);
  });

  it('leave a death to the event path when it covers it, and reopen a stream that said nothing of it', async () => {
    const verdict: { v: Coverage } = { v: 'covered' };
    const missed: FoundItem[][] = [];
    const eventPath = pathSaying(verdict, false, missed);
    const { runner, requested } = runnerWith(() => crash(nowMs - 6_000), { eventPath });
    await runner.lookNow('reconcile');
    expect(requested).toEqual([]);

    verdict.v = 'missed';
    const other = runnerWith(() => crash(nowMs - 6_000), { eventPath });
    await other.runner.lookNow('reconcile');
    expect(other.requested).toHaveLength(1);
    expect(missed).toEqual([[{ key: 'crash:s1@exited/0', change: { containerId: 'c1', atMs: nowMs - 6_000 } }]]);
  });

  it('leave an item to a pending start request only when the item says the start request covers it', async () => {
    const backUp = (covered: boolean): Finding => ({ items: [{ key: 'back-up:s1', ...(covered ? { coveredByStartRequest: true } : {}) }] });
    const pending = pathSaying({ v: 'uncovered' }, true);
    const left = runnerWith(() => backUp(true), { eventPath: pending });
    await left.runner.lookNow('reconcile');
    expect(left.requested).toEqual([]);
    // The same key without the mark: the runner reads no item's key, so nothing covers it.
    const unmarked = runnerWith(() => backUp(false), { eventPath: pending });
    await unmarked.runner.lookNow('reconcile');
    expect(unmarked.requested).toHaveLength(1);
    // Marked, with no start request pending: requested.
    const none = runnerWith(() => backUp(true), { eventPath: pathSaying({ v: 'uncovered' }, false) });
    await none.runner.lookNow('reconcile');
    expect(none.requested).toHaveLength(1);
  });

  it('never leave a death to an event path that passed over it: a run begun after its event finished, and the death is still there', async () => {
    const eventPath = pathSaying({ v: 'covered' });
    const hints = new EventHints();
    const diedAtMs = nowMs - 2_000;
    const { runner, requested } = runnerWith(() => crash(diedAtMs), { eventPath, hints });
    // A run that began before the death (its observation is older than the event): the event's own run is still to come.
    hints.notePass({ observedFromMs: diedAtMs - 50, finishedAtMs: nowMs - 1_000 });
    await runner.lookNow('reconcile');
    expect(requested).toEqual([]);
    // The event's run began 14 ms after the death and finished; the death is still there: requested at once.
    hints.notePass({ observedFromMs: diedAtMs + 14, finishedAtMs: nowMs - 500 });
    await runner.lookNow('reconcile');
    expect(requested).toEqual([{ loop: 'reconcile', why: 'local look: crash:s1@exited/0', serviceId: 's1' }]);
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
    const runner = new LookRunner({
      looks: [lookEvery('reconcile', 40), lookEvery('pool', 80)],
      view: () => new EngineView({ listContainerUsage: async () => (lists++, []) }),
      request: async () => undefined,
      lastRunFinishedAtMs: () => undefined,
      log: silentLogger,
      clock,
    });
    stopAfter.push(runner);
    runner.start();
    await waitFor('four pool looks', () => views.pool.length >= 4, 20_000, 5);
    await runner.stop();
    // The pool's grid (every 80 ms) meets the reconcile's (every 40 ms) at each of its looks, late timers or not.
    for (const v of views.pool) expect(views.reconcile).toContain(v);
    expect(lists).toBe(runner.rounds);
    expect(lists).toBe(new Set(views.reconcile).size);
    expect(views.reconcile.length + views.pool.length).toBeGreaterThan(lists);
  });

  it('say when a look fails, once, and go on looking; each look is kept for keeper status', async () => {
    let fail = true;
    const lines: string[] = [];
    const kept: LookOutcome[] = [];
    const log = { ...silentLogger, warn: (m: string) => void lines.push(m), info: (m: string) => void lines.push(m), child: () => log };
    const runner = new LookRunner({
      record: (loop, outcome) => {
        kept.push(outcome);
        if (kept.length === 1) throw new Error('database is locked'); // keeping it failed: the looks go on
      },
      looks: [{ loop: 'gc', everyMs: 60_000, look: async () => (fail ? Promise.reject(new Error('engine down')) : NOTHING_FOUND) }],
      view: noEngine,
      request: async () => undefined,
      lastRunFinishedAtMs: () => undefined,
      log,
      clock,
    });
    expect(await runner.lookNow('gc')).toMatchObject({ error: 'engine down' });
    await runner.lookNow('gc');
    fail = false;
    await runner.lookNow('gc');
    expect(lines).toEqual([
      'local look failed; the next one tries again',
      'local look not recorded for keeper status',
      'local look works again',
    ]);
    expect(kept).toEqual([
      { items: [], requested: false, error: 'engine down' },
      { items: [], requested: false, error: 'engine down' },
      { items: [], requested: false },
    ]);
  });
});

describe('a look that cannot finish', () => {
  it('is recorded failing at its deadline, and the next round looks anew instead of joining it', async () => {
    const kept: LookOutcome[] = [];
    const hung = new Promise<Finding>(() => undefined); // what no deadline of the engine's ends
    let looks = 0;
    const runner = new LookRunner({
      looks: [{ loop: 'reconcile', everyMs: 20, deadlineMs: 100, look: async () => (++looks === 1 ? hung : NOTHING_FOUND) }],
      view: noEngine,
      request: async () => undefined,
      lastRunFinishedAtMs: () => undefined,
      record: (_loop, outcome) => void kept.push(outcome),
      log: silentLogger,
      clock,
    });
    stopAfter.push(runner);
    runner.start();
    await waitFor('a look after the hung one', () => kept.length >= 2, 20_000, 5);
    await runner.stop();
    expect(kept[0]).toEqual({ items: [], requested: false, error: 'the look did not finish within 0.1 s' });
    expect(kept[1]).toEqual({ items: [], requested: false });
    expect(runner.stats.get('reconcile')).toMatchObject({ failed: 1, abandoned: 1 });
  });

  it("fails with the engine's own line when a call of the round's view runs out its deadline, and works again once the engine answers", async () => {
    const engine = new MemoryEngine();
    engine.deadlineMs = 50;
    engine.wedge();
    const kept: LookOutcome[] = [];
    const runner = new LookRunner({
      looks: [{ loop: 'pool', everyMs: 60_000, look: async (view) => (await view.containers(), NOTHING_FOUND) }],
      view: () => new EngineView(engine),
      request: async () => undefined,
      lastRunFinishedAtMs: () => undefined,
      record: (_loop, outcome) => void kept.push(outcome),
      log: silentLogger,
      clock,
    });
    expect(await runner.lookNow('pool')).toEqual({
      items: [],
      requested: false,
      error: 'docker container.list: the engine did not answer within 0.05 s',
    });
    engine.release();
    expect(await runner.lookNow('pool')).toEqual({ items: [], requested: false });
    expect(kept).toHaveLength(2);
  });

  it('that saw part of the host requests what it found, and is recorded failing', async () => {
    const kept: LookOutcome[] = [];
    const requested: string[] = [];
    const partly: Finding = { items: [{ key: 'gc-containers:c1' }], failed: 'gc class volumes: down' };
    const runner = new LookRunner({
      looks: [{ loop: 'gc', everyMs: 60_000, look: async () => partly }],
      view: noEngine,
      request: async (_loop, why) => void requested.push(why),
      lastRunFinishedAtMs: () => undefined,
      record: (_loop, outcome) => void kept.push(outcome),
      log: silentLogger,
      clock,
    });
    await runner.lookNow('gc');
    expect(requested).toEqual(['local look: gc-containers:c1']);
    expect(kept).toEqual([{ items: ['gc-containers:c1'], requested: true, error: 'gc class volumes: down' }]);
    expect(runner.stats.get('gc')).toMatchObject({ failed: 1, requested: 1 });
  });

  it("does not hold up stop past its wait (a worker's shutdown)", async () => {
    const runner = new LookRunner({
      stopWaitMs: 200,
      looks: [{ loop: 'gc', everyMs: 60_000, look: () => new Promise<Finding>(() => undefined) }],
      view: noEngine,
      request: async () => undefined,
      lastRunFinishedAtMs: () => undefined,
      log: silentLogger,
      clock,
    });
    void runner.lookNow('gc');
    const startedAt = performance.now();
    await runner.stop();
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
