/**
 * The worker's local looks: every few seconds, in the worker and with no Temporal call, each loop looks at what a
 * run of it would do now (each loop's look is declared by its unit, src/loops/), and requests a run only when the
 * look finds something. Looking costs nothing on the cluster; only a look that finds something to do costs the run
 * that does it. They run at least as often as ah's own loops (reconcile 30 s, pool 60 s, GC 5 min), whatever
 * Docker's event stream does, so no path is slower than ah's: a silent event stream, a change made only in the DB, a
 * held engine stop reaching its grace, a pool short of its size, an orphan past its age guard.
 *
 * The runner knows no loop: what it needs of an item (a change the event path may cover, a start request that
 * covers it) comes with the item (src/watch/finding.ts).
 */
import { oneLine } from '../text';
import type { EngineView } from './engine-view';
import type { ContainerChange, Finding, FoundItem } from './finding';
import type { Logger } from '../log';
import type { KeeperMetrics } from '../metrics';
import { decideRequest, type RequestState } from './request-rules';
import type { Clock } from '../time';

/**
 * A look's deadline unless it says otherwise: its interval, and at least this. Each engine call a look makes has a
 * deadline of its own (src/docker/client.ts), shorter, which names the call; this one catches whatever else could
 * hang a look, so that no look is left running, unseen, while the rounds after it wait for it.
 */
export const LOOK_DEADLINE_MIN_MS = 30_000;
/** How long `stop` waits for the looks still running before it leaves them (a worker's shutdown must not wait on a hung one). */
export const STOP_WAIT_MS = 5_000;

/** One loop's look: how often, and what a run would do now. */
export interface LoopLook {
  loop: string;
  everyMs: number;
  /** The first look comes this long after the start (default: everyMs). */
  firstAfterMs?: number;
  /** A look still running this long after it began is recorded as failing and left behind (default: lookDeadlineMs). */
  deadlineMs?: number;
  /** What a run would do now; `view` is the round's one list of the engine's containers, shared by its looks. */
  look(view: EngineView): Promise<Finding>;
}

/**
 * Whether the event path covers a change a look found: `covered`, its event arrived lately and the tick it requested
 * will handle it, or it may still arrive; `missed`, the stream is open and said nothing of it in the time it owed
 * its event (the stream is silent); `uncovered`, anything else (no stream to ask, a change from before the stream
 * opened, an event whose tick came and left the change, e.g. an engine stop held for its grace).
 */
export type Coverage = 'covered' | 'uncovered' | 'missed';

/** What the looks ask of the event path (the event watcher, src/watch/event-watcher.ts, is it). */
export interface EventPath {
  coverage(change: ContainerChange, nowMs: number): Coverage;
  /** A request after a container start is pending: it covers a service coming back up. */
  readonly startRequestPending: boolean;
  /** The stream missed the changes of these items: it is silent, and reopened. */
  streamMissed(items: FoundItem[]): void;
}

export interface LookRunnerOptions {
  looks: LoopLook[];
  /** A new view of the engine, for one round of looks (src/watch/engine-view.ts). */
  view(): EngineView;
  /** Requests one run of the loop; resolves when Temporal has taken it (src/watch/requests.ts keeps it until then). */
  request(loop: string, why: string, serviceId?: string): Promise<unknown>;
  /** When a run of the loop last finished (unix ms). */
  lastRunFinishedAtMs(loop: string): number | undefined;
  eventPath?: EventPath;
  /**
   * A run began after a change at `changeAtMs` and finished before a look that began at `lookStartedMs`
   * (src/watch/event-hints.ts): a look that still finds the change requests it, whatever the event path says.
   */
  passedOver?(changeAtMs: number, lookStartedMs: number): boolean;
  /**
   * Keeps how each look went, for `keeper status` (src/db/look-states.ts): not waited for (a write may wait for
   * another writer's lock), and a failure to keep it stops no look.
   */
  record?(loop: string, outcome: LookOutcome): void | Promise<void>;
  log: Logger;
  clock: Clock;
  metrics?: KeeperMetrics;
  /** How long `stop` waits for the looks still running (default STOP_WAIT_MS). */
  stopWaitMs?: number;
}

export interface LookOutcome {
  /** The keys of what the look found. */
  items: string[];
  requested: boolean;
  error?: string;
}

export interface LookStats {
  looks: number;
  found: number;
  requested: number;
  /** Looks that failed, those past their deadline included. */
  failed: number;
  /** Looks left behind, still running, when their deadline passed. */
  abandoned: number;
}

export const lookDeadlineMs = (look: Pick<LoopLook, 'everyMs' | 'deadlineMs'>): number =>
  look.deadlineMs ?? Math.max(LOOK_DEADLINE_MIN_MS, look.everyMs);

/**
 * The looks run in rounds: each loop looks on its own grid (its first look, then every `everyMs`), and the looks due
 * at the same moment run together over one view of the engine, so the engine is listed once a round, not once a
 * loop. At the defaults (reconcile 10 s, pool 15 s, GC 1 min) the grids meet every 30 s and every minute.
 */
export class LookRunner {
  readonly stats = new Map<string, LookStats>();
  /** Rounds that looked, each over one view of the engine. */
  rounds = 0;
  private timer?: NodeJS.Timeout;
  /** When each loop's next look is due, on the monotonic clock (performance.now()). */
  private readonly dueAt = new Map<string, number>();
  private readonly running = new Map<string, Promise<LookOutcome>>();
  private readonly requests = new Map<string, RequestState | undefined>();
  private readonly lastError = new Map<string, string>();
  private stopped = true;

  constructor(private readonly o: LookRunnerOptions) {
    for (const l of o.looks) this.stats.set(l.loop, { looks: 0, found: 0, requested: 0, failed: 0, abandoned: 0 });
  }

  start(): void {
    this.stopped = false;
    const startedAt = performance.now();
    for (const l of this.o.looks) {
      this.dueAt.set(l.loop, startedAt + (l.firstAfterMs ?? l.everyMs));
      this.o.metrics?.lookFailing.set(0, { loop: l.loop }); // each loop's series exists from the start
    }
    this.scheduleRound();
  }

  /** Stops the rounds, and waits for the looks still running, at most STOP_WAIT_MS. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.o.stopWaitMs ?? STOP_WAIT_MS)));
    await Promise.race([Promise.all(this.running.values()), waited]);
    clearTimeout(timer);
  }

  /** One look of `loop` now (a look already running is joined), and its request if it finds something. */
  lookNow(loop: string, view: EngineView = this.o.view()): Promise<LookOutcome> {
    const look = this.o.looks.find((l) => l.loop === loop);
    if (!look) return Promise.reject(new Error(`no look for loop ${loop}`));
    const running = this.running.get(loop) ?? this.boundedLook(look, view).finally(() => this.running.delete(loop));
    this.running.set(loop, running);
    return running;
  }

  /**
   * One look within its deadline, told, counted and recorded. A look past its deadline fails ("did not finish") and
   * is left behind: the next round looks anew instead of joining it, and whatever it finds later is dropped.
   */
  private async boundedLook(look: LoopLook, view: EngineView): Promise<LookOutcome> {
    const stats = this.stats.get(look.loop)!;
    stats.looks++;
    const deadlineMs = lookDeadlineMs(look);
    const left = { behind: false };
    let timer: NodeJS.Timeout | undefined;
    const ranOut = new Promise<LookOutcome>((resolve) => {
      timer = setTimeout(() => {
        left.behind = true;
        stats.abandoned++;
        resolve({ items: [], requested: false, error: `the look did not finish within ${deadlineMs / 1000} s` });
      }, deadlineMs);
    });
    const outcome = await Promise.race([this.lookOnce(look, view, left), ranOut]).finally(() => clearTimeout(timer));
    if (outcome.error !== undefined) {
      stats.failed++;
      this.lookFailed(look.loop, outcome.error);
    } else this.lookRecovered(look.loop);
    this.o.metrics?.lookFailing.set(outcome.error === undefined ? 0 : 1, { loop: look.loop });
    return this.recorded(look.loop, outcome);
  }

  /** The next round, when the first look is due. A round does not wait for its looks: a slow one delays no other. */
  private scheduleRound(): void {
    if (this.stopped || this.dueAt.size === 0) return;
    const next = Math.min(...this.dueAt.values());
    this.timer = setTimeout(() => this.round(), Math.max(0, next - performance.now()));
    this.timer.unref?.();
  }

  /** Every look that is due, over one view; each loop's next look stays on its grid, skipping what it missed. */
  private round(): void {
    const now = performance.now();
    const due = this.o.looks.filter((l) => this.dueAt.get(l.loop)! <= now);
    if (due.length > 0) {
      this.rounds++;
      const view = this.o.view();
      for (const l of due) {
        const dueAt = this.dueAt.get(l.loop)!;
        this.dueAt.set(l.loop, dueAt + l.everyMs * (Math.floor((now - dueAt) / l.everyMs) + 1));
        void this.lookNow(l.loop, view);
      }
    }
    this.scheduleRound();
  }

  /** The look itself, and its request; one `left.behind` (past its deadline) acts on nothing it finds. */
  private async lookOnce(look: LoopLook, view: EngineView, left: { behind: boolean }): Promise<LookOutcome> {
    const stats = this.stats.get(look.loop)!;
    const startedMs = this.o.clock.nowMs();
    let finding: Finding;
    try {
      finding = await look.look(view);
    } catch (err) {
      return { items: [], requested: false, error: oneLine(err) };
    }
    if (left.behind) return { items: [], requested: false };
    const keys = finding.items.map((i) => i.key);
    this.o.metrics?.looks.add(1, { loop: look.loop, found: keys.length > 0 ? 'yes' : 'no' });
    this.o.log.debug('local look', { loop: look.loop, found: keys.length });
    if (keys.length > 0) stats.found++;
    const nowMs = this.o.clock.nowMs();
    const { request, next } = decideRequest(this.requests.get(look.loop), {
      keys,
      nowMs,
      lastRunFinishedAtMs: this.o.lastRunFinishedAtMs(look.loop),
      covered: this.covered(finding, nowMs, startedMs),
    });
    this.requests.set(look.loop, next);
    const failed = finding.failed === undefined ? {} : { error: finding.failed };
    if (!request) return { items: keys, requested: false, ...failed };
    stats.requested++;
    const why = describe(keys);
    this.o.log.info('local look found something to do: requesting a run', { loop: look.loop, look: why });
    void this.o.request(look.loop, `local look: ${why}`, finding.serviceId);
    return { items: keys, requested: true, ...failed };
  }

  /**
   * Whether the event path covers every item of a finding: an item whose change it covers, or one a pending start
   * request covers. A change the stream missed reopens it; one that a run begun after it has passed over is not
   * covered, whatever its event says.
   */
  private covered(finding: Finding, nowMs: number, lookStartedMs: number): boolean {
    const path = this.o.eventPath;
    if (!path || finding.items.length === 0) return false;
    const coverageOf = (change: ContainerChange): Coverage => {
      const c = path.coverage(change, nowMs);
      return c === 'covered' && this.o.passedOver?.(change.atMs, lookStartedMs) ? 'uncovered' : c;
    };
    const verdicts = finding.items.map((item) => ({ item, coverage: item.change ? coverageOf(item.change) : 'uncovered' }));
    const missed = verdicts.filter((v) => v.coverage === 'missed').map((v) => v.item);
    if (missed.length > 0) path.streamMissed(missed);
    return verdicts.every((v) => v.coverage === 'covered' || (v.item.coveredByStartRequest === true && path.startRequestPending));
  }

  private recorded(loop: string, outcome: LookOutcome): LookOutcome {
    const notRecorded = (err: unknown) => this.o.log.warn('local look not recorded for keeper status', { loop, error: oneLine(err) });
    try {
      void this.o.record?.(loop, outcome)?.catch(notRecorded);
    } catch (err) {
      notRecorded(err);
    }
    return outcome;
  }

  private lookFailed(loop: string, error: string): void {
    if (this.lastError.get(loop) !== error) this.o.log.warn('local look failed; the next one tries again', { loop, error });
    this.lastError.set(loop, error);
  }

  private lookRecovered(loop: string): void {
    if (!this.lastError.has(loop)) return;
    this.lastError.delete(loop);
    this.o.log.info('local look works again', { loop });
  }
}

/** The items in a log line's worth: the first few, and how many more. */
function describe(keys: string[]): string {
  const shown = keys.slice(0, 5).join(', ');
  return keys.length > 5 ? `${shown} and ${keys.length - 5} more` : shown;
}
