/**
 * The worker's local looks ("sensors"): every few seconds, in the worker and with no Temporal call, each loop looks at
 * what a run of it would do now (src/host/looks/), and asks for a run only when the look finds something. Looking
 * costs nothing on the cluster; only a look that finds something to do costs the run that does it. They run at
 * least as often as ah's own loops (reconcile 30 s, pool 60 s, GC 5 min), whatever Docker's event stream does, so
 * no path is slower than ah's: a silent event stream, a change made only in the DB, a held engine stop reaching
 * its grace, a pool short of its size, an orphan past its age guard.
 */
import { oneLine } from '../text';
import type { EngineView } from '../host/engine-view';
import type { ContainerChange, Finding } from '../host/looks/finding';
import type { LoopName } from '../ids';
import type { Logger } from '../log';
import type { KeeperMetrics } from '../metrics';
import { decideAsk, type AskState } from '../policy/look-asks';
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
  loop: LoopName;
  everyMs: number;
  /** The first look comes this long after the start (default: everyMs). */
  firstAfterMs?: number;
  /** A look still running this long after it began is recorded as failing and left behind (default: lookDeadlineMs). */
  deadlineMs?: number;
  /** What a run would do now; `view` is the round's one list of the engine's containers, shared by its looks. */
  look(view: EngineView): Promise<Finding>;
}

/** What the event watcher can say of a change a look found (src/events/watcher.ts implements it). */
export interface EventWitness {
  /**
   * `explained`: its event arrived lately, and the tick it asked for is in hand; `handled`: its event arrived long
   * ago, and that tick left the change (e.g. an engine stop held for its grace); `too-recent`: its event may still
   * arrive; `missed`: the stream is open and said nothing of it; `not-following`: there is no stream to ask.
   */
  account(change: ContainerChange, nowMs: number): 'explained' | 'handled' | 'too-recent' | 'missed' | 'not-following';
  /** A container start's look is due soon: a service coming back up is in hand. */
  readonly startLookPending: boolean;
  /** The stream missed these changes: it is silent, and reopened. */
  streamMissed(changes: ContainerChange[]): void;
}

export interface SensorsOptions {
  looks: LoopLook[];
  /** A new view of the engine, for one round of looks (src/host/engine-view.ts). */
  view(): EngineView;
  /** Asks for one run of the loop; resolves when Temporal has taken it (src/sensors/requests.ts keeps it until then). */
  ask(loop: LoopName, why: string, serviceId?: string): Promise<unknown>;
  /** When a run of the loop last finished (unix ms). */
  lastRunFinishedAtMs(loop: LoopName): number | undefined;
  witness?: EventWitness;
  /**
   * A run began after a change at `changeAtMs` and finished before a look that began at `lookStartedMs`
   * (src/host/event-hints.ts): a look that still finds the change asks for it, whatever the witness says.
   */
  passedOver?(changeAtMs: number, lookStartedMs: number): boolean;
  /**
   * Keeps how each look went, for `keeper status` (src/db/look-states.ts): not waited for (a write may wait for
   * another writer's lock), and a failure to keep it stops no look.
   */
  record?(loop: LoopName, outcome: LookOutcome): void | Promise<void>;
  log: Logger;
  clock: Clock;
  metrics?: KeeperMetrics;
  /** How long `stop` waits for the looks still running (default STOP_WAIT_MS). */
  stopWaitMs?: number;
}

export interface LookOutcome {
  items: string[];
  asked: boolean;
  error?: string;
}

export interface SensorStats {
  looks: number;
  found: number;
  asked: number;
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
export class Sensors {
  readonly stats = new Map<LoopName, SensorStats>();
  /** Rounds that looked, each over one view of the engine. */
  rounds = 0;
  private timer?: NodeJS.Timeout;
  /** When each loop's next look is due, on the monotonic clock (performance.now()). */
  private readonly dueAt = new Map<LoopName, number>();
  private readonly running = new Map<LoopName, Promise<LookOutcome>>();
  private readonly asks = new Map<LoopName, AskState | undefined>();
  private readonly lastError = new Map<LoopName, string>();
  private stopped = true;

  constructor(private readonly o: SensorsOptions) {
    for (const l of o.looks) this.stats.set(l.loop, { looks: 0, found: 0, asked: 0, failed: 0, abandoned: 0 });
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

  /** One look of `loop` now (a look already running is joined), and its ask if it finds something. */
  lookNow(loop: LoopName, view: EngineView = this.o.view()): Promise<LookOutcome> {
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
        resolve({ items: [], asked: false, error: `the look did not finish within ${deadlineMs / 1000} s` });
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

  /** The look itself, and its ask; one `left.behind` (past its deadline) acts on nothing it finds. */
  private async lookOnce(look: LoopLook, view: EngineView, left: { behind: boolean }): Promise<LookOutcome> {
    const stats = this.stats.get(look.loop)!;
    const startedMs = this.o.clock.nowMs();
    let finding: Finding;
    try {
      finding = await look.look(view);
    } catch (err) {
      return { items: [], asked: false, error: oneLine(err) };
    }
    if (left.behind) return { items: [], asked: false };
    this.o.metrics?.looks.add(1, { loop: look.loop, found: finding.items.length > 0 ? 'yes' : 'no' });
    this.o.log.debug('local look', { loop: look.loop, found: finding.items.length });
    if (finding.items.length > 0) stats.found++;
    const nowMs = this.o.clock.nowMs();
    const inHand = this.inHand(finding, nowMs, startedMs);
    const { ask, next } = decideAsk(this.asks.get(look.loop), {
      items: finding.items,
      nowMs,
      lastRunFinishedAtMs: this.o.lastRunFinishedAtMs(look.loop),
      inHand,
    });
    this.asks.set(look.loop, next);
    const failed = finding.failed === undefined ? {} : { error: finding.failed };
    if (!ask) return { items: finding.items, asked: false, ...failed };
    stats.asked++;
    const why = describe(finding.items);
    this.o.log.info('local look found something to do: asking for a run', { loop: look.loop, look: why });
    void this.o.ask(look.loop, `local look: ${why}`, finding.serviceId);
    return { items: finding.items, asked: true, ...failed };
  }

  /**
   * Whether the event path already has every item of a finding in hand; a change the stream missed reopens it. A
   * change that a run begun after it has passed over is not in hand, whatever its event says.
   */
  private inHand(finding: Finding, nowMs: number, lookStartedMs: number): boolean {
    const witness = this.o.witness;
    if (!witness || finding.items.length === 0) return false;
    const verdictOf = (c: ContainerChange) => {
      const v = witness.account(c, nowMs);
      const deferred = v === 'explained' || v === 'too-recent';
      return deferred && this.o.passedOver?.(c.atMs, lookStartedMs) ? 'handled' : v;
    };
    const verdicts = finding.changes.map((c) => ({ c, v: verdictOf(c) }));
    const missed = verdicts.filter((x) => x.v === 'missed').map((x) => x.c);
    if (missed.length > 0) witness.streamMissed(missed);
    const covered = new Set(verdicts.filter((x) => x.v === 'explained' || x.v === 'too-recent').map((x) => x.c.item));
    return finding.items.every((i) => covered.has(i) || (i.startsWith('back-up:') && witness.startLookPending));
  }

  private recorded(loop: LoopName, outcome: LookOutcome): LookOutcome {
    const notRecorded = (err: unknown) => this.o.log.warn('local look not recorded for keeper status', { loop, error: oneLine(err) });
    try {
      void this.o.record?.(loop, outcome)?.catch(notRecorded);
    } catch (err) {
      notRecorded(err);
    }
    return outcome;
  }

  private lookFailed(loop: LoopName, error: string): void {
    if (this.lastError.get(loop) !== error) this.o.log.warn('local look failed; the next one tries again', { loop, error });
    this.lastError.set(loop, error);
  }

  private lookRecovered(loop: LoopName): void {
    if (!this.lastError.has(loop)) return;
    this.lastError.delete(loop);
    this.o.log.info('local look works again', { loop });
  }
}

/** The items in a log line's worth: the first few, and how many more. */
function describe(items: string[]): string {
  const shown = items.slice(0, 5).join(', ');
  return items.length > 5 ? `${shown} and ${items.length - 5} more` : shown;
}
