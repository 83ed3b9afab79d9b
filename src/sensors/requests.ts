/**
 * Requests for a loop run, kept until Temporal takes them. A request that Temporal cannot take (the server is down or
 * restarting, the network is cut) is not dropped: it is sent again with a backoff (1 s doubling to 10 s) until it is
 * taken, so a change seen during an outage gets its run within seconds of the server answering again. Requests made
 * while one is being sent join it: the run it starts looks after all of them were made.
 */
import { oneLine } from '../db/open';
import type { Logger } from '../log';
import { exponentialBackoff } from '../policy/backoff';

export type RequestOutcome = 'taken' | 'declined' | 'stopped';

/** Sends one request; false: declined (an operator paused the loop). Throws when Temporal did not take it. */
export type SendRequest = (why: string, serviceId?: string) => Promise<boolean | void>;

export interface RequestRetry {
  minMs: number;
  maxMs: number;
}

export const REQUEST_RETRY: RequestRetry = { minMs: 1_000, maxMs: 10_000 };

export interface LoopRequesterStats {
  taken: number;
  declined: number;
  /** Attempts Temporal did not take (each retried). */
  failedAttempts: number;
}

export class LoopRequester {
  readonly stats: LoopRequesterStats = { taken: 0, declined: 0, failedAttempts: 0 };
  private pending: Promise<RequestOutcome> | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;

  constructor(private readonly o: { loop: string; send: SendRequest; log: Logger; retry?: RequestRetry }) {}

  /** Resolves once Temporal has taken the request (or declined it, or the requester stopped). */
  request(why: string, serviceId?: string): Promise<RequestOutcome> {
    if (this.stopped) return Promise.resolve('stopped');
    this.pending ??= this.sendUntilTaken(why, serviceId).finally(() => (this.pending = undefined));
    return this.pending;
  }

  /** Whether a request is waiting to be taken. */
  get waiting(): boolean {
    return this.pending !== undefined;
  }

  stop(): Promise<RequestOutcome | undefined> {
    this.stopped = true;
    this.wake?.();
    return this.pending ?? Promise.resolve(undefined);
  }

  private async sendUntilTaken(why: string, serviceId?: string): Promise<RequestOutcome> {
    const retry = this.o.retry ?? REQUEST_RETRY;
    for (let attempt = 1; !this.stopped; attempt++) {
      try {
        const taken = (await this.o.send(why, serviceId)) !== false;
        this.stats[taken ? 'taken' : 'declined']++;
        if (attempt > 1) this.o.log.info('run request taken after Temporal did not take it', { loop: this.o.loop, why, attempts: attempt });
        return taken ? 'taken' : 'declined';
      } catch (err) {
        this.stats.failedAttempts++;
        const delayMs = exponentialBackoff(attempt, retry.minMs, retry.maxMs);
        const fields = { loop: this.o.loop, why, attempt, retryInMs: delayMs, error: oneLine(err) };
        if (attempt === 1) this.o.log.warn('Temporal did not take a run request; kept and sent again until it does', fields);
        else this.o.log.debug('run request still not taken', fields);
        await this.sleep(delayMs);
      }
    }
    return 'stopped';
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wake = () => (clearTimeout(t), resolve());
    });
  }
}
