/**
 * Requests for a loop run, kept until Temporal takes them. A request that Temporal cannot take (the server is down or
 * restarting, the network is cut) is not dropped: it is sent again with a backoff (1 s doubling to 10 s) until it is
 * taken, so a change seen during an outage gets its run within seconds of the server answering again. Requests made
 * while one is being sent join it: the run it starts sees all that was there when they were made.
 *
 * A request Temporal refuses for good (its schedule is gone, the namespace is unknown, keeper may not start the run)
 * is told apart from one it did not take this time: it is said at warn, with its error, when it starts and every few
 * minutes while it lasts (never only once, never at each attempt), counted, and kept for `keeper status`
 * (`onFailing`). It is still sent again, every minute: what mends it happens outside this process and tells it
 * nothing (a worker restart recreates the schedules, an operator grants the permission or unpauses and recreates a
 * schedule), and a request dropped would lose the change it requests until a backstop that may itself be gone.
 */
import { oneLine } from '../text';
import type { Logger } from '../log';
import { exponentialBackoff } from '../policy/backoff';
import { systemClock, type Clock } from '../time';

export type RequestOutcome = 'taken' | 'declined' | 'stopped';

/** Sends one request; false: declined (an operator paused the loop). Throws when Temporal did not take it. */
export type SendRequest = (why: string, serviceId?: string) => Promise<boolean | void>;

export interface RequestRetry {
  minMs: number;
  maxMs: number;
}

export const REQUEST_RETRY: RequestRetry = { minMs: 1_000, maxMs: 10_000 };
/** A refusal for good is sent again at this pace: nothing in this process can mend it, so sooner would only cost calls. */
export const REFUSED_RETRY: RequestRetry = { minMs: 10_000, maxMs: 60_000 };
/** A request that keeps failing is said again at warn this often (between, each attempt is at debug). */
export const WARN_AGAIN_MS = 5 * 60_000;

export interface LoopRequesterStats {
  taken: number;
  declined: number;
  /** Attempts Temporal did not take (each retried), refusals included. */
  failedAttempts: number;
  /** Of those, the attempts Temporal refused for good. */
  refusedAttempts: number;
}

/** A request that has not been taken yet, since its first failed attempt. */
export interface FailingRequest {
  why: string;
  /** Unix ms of its first failed attempt. */
  sinceMs: number;
  attempts: number;
  /** The last attempt's error, in one line. */
  error: string;
  /** Temporal refused it for good (see isPermanent). */
  refused: boolean;
}

export interface LoopRequesterOptions {
  loop: string;
  send: SendRequest;
  log: Logger;
  retry?: RequestRetry;
  refusedRetry?: RequestRetry;
  /** Whether a failure is Temporal's refusal for good (src/temporal/operations.ts isPermanentRefusal); none when unset. */
  isPermanent?: (err: unknown) => boolean;
  /** Told after each failed attempt, and with undefined once the request is taken, declined or dropped at stop. */
  onFailing?: (failing: FailingRequest | undefined) => void;
  clock?: Clock;
}

export class LoopRequester {
  readonly stats: LoopRequesterStats = { taken: 0, declined: 0, failedAttempts: 0, refusedAttempts: 0 };
  private pending: Promise<RequestOutcome> | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;
  /** The request being sent, while its attempts fail. */
  private failing: FailingRequest | undefined;
  private warnedAtMs = 0;

  constructor(private readonly o: LoopRequesterOptions) {}

  /** Resolves once Temporal has taken the request (or declined it, or the requester stopped). */
  request(why: string, serviceId?: string): Promise<RequestOutcome> {
    if (this.stopped) return Promise.resolve('stopped');
    this.pending ??= this.sendUntilTaken(why, serviceId)
      .then((outcome) => this.ended(outcome))
      .finally(() => (this.pending = undefined));
    return this.pending;
  }

  /** Whether a request is waiting to be taken. */
  get waiting(): boolean {
    return this.pending !== undefined;
  }

  /** The request being sent while its attempts fail; undefined when none is. */
  get failingRequest(): FailingRequest | undefined {
    return this.failing;
  }

  stop(): Promise<RequestOutcome | undefined> {
    this.stopped = true;
    this.wake?.();
    return this.pending ?? Promise.resolve(undefined);
  }

  private async sendUntilTaken(why: string, serviceId?: string): Promise<RequestOutcome> {
    for (let attempt = 1; !this.stopped; attempt++) {
      try {
        const taken = (await this.o.send(why, serviceId)) !== false;
        this.stats[taken ? 'taken' : 'declined']++;
        if (attempt > 1) this.o.log.info('run request taken after Temporal did not take it', { loop: this.o.loop, why, attempts: attempt });
        return taken ? 'taken' : 'declined';
      } catch (err) {
        await this.sleep(this.failed(why, attempt, err));
      }
    }
    return 'stopped';
  }

  /** Counts and tells a failed attempt; returns how long to wait before the next. */
  private failed(why: string, attempt: number, err: unknown): number {
    const refused = this.o.isPermanent?.(err) ?? false;
    const error = oneLine(err);
    const nowMs = (this.o.clock ?? systemClock).nowMs();
    this.stats.failedAttempts++;
    if (refused) this.stats.refusedAttempts++;
    const changed = !this.failing || this.failing.refused !== refused || this.failing.error !== error;
    this.failing = { why, sinceMs: this.failing?.sinceMs ?? nowMs, attempts: attempt, error, refused };
    const retry = refused ? (this.o.refusedRetry ?? REFUSED_RETRY) : (this.o.retry ?? REQUEST_RETRY);
    const delayMs = exponentialBackoff(attempt, retry.minMs, retry.maxMs);
    const fields = { loop: this.o.loop, why, attempt, retryInMs: delayMs, error, since: new Date(this.failing.sinceMs).toISOString() };
    if (changed || nowMs - this.warnedAtMs >= WARN_AGAIN_MS) {
      this.warnedAtMs = nowMs;
      this.o.log.warn(
        refused
          ? 'Temporal refused a run request: it cannot be taken until an operator mends its cause; kept and sent again every minute'
          : 'Temporal did not take a run request; kept and sent again until it does',
        fields,
      );
    } else this.o.log.debug('run request still not taken', fields);
    this.tell(this.failing);
    return delayMs;
  }

  private ended(outcome: RequestOutcome): RequestOutcome {
    if (this.failing) this.tell(undefined);
    this.failing = undefined;
    this.warnedAtMs = 0;
    return outcome;
  }

  /** Keeping the state for `keeper status` never stops the request. */
  private tell(failing: FailingRequest | undefined): void {
    try {
      this.o.onFailing?.(failing);
    } catch (err) {
      this.o.log.warn('run request state not recorded for keeper status', { loop: this.o.loop, error: oneLine(err) });
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wake = () => (clearTimeout(t), resolve());
    });
  }
}
