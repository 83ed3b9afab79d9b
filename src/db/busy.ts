/**
 * Waiting for another writer's lock without stalling the event loop. better-sqlite3 is synchronous: a write that
 * meets ah's write lock waits inside SQLite, up to busy_timeout, and the whole worker (its heartbeats, its event
 * handling, its looks) waits with it. The worker's connection therefore has a short busy_timeout, and its writes are
 * retried here, awaited, with a backoff, until the lock is free or a bound runs out; a wait that runs out is a
 * StateDbBusyError that says what waited, and how long. Only what is safe to run again is retried: one statement, a
 * transaction (rolled back whole when it fails), or a sequence of compare-and-set writes that a second run finds done.
 */
import { exponentialBackoff } from '../policy/backoff';
import { setBusyTimeout, StateDbError, type StateDb } from './open';

/** The worker's busy_timeout: the longest a write blocks the event loop before it gives way to an awaited retry. */
export const WORKER_BUSY_TIMEOUT_MS = 100;

export interface WriteRetry {
  /** The first pause after a write found the lock taken, doubled per try up to `maxDelayMs`. */
  firstDelayMs: number;
  maxDelayMs: number;
  /** How long a write may wait for the lock in all before it fails. */
  totalMs: number;
}

/** Half a minute: longer than any transaction of ah's or keeper's holds the lock, shorter than an activity's timeout. */
export const WRITE_RETRY: WriteRetry = { firstDelayMs: 20, maxDelayMs: 500, totalMs: 30_000 };

/**
 * A worker's connection, once opened (the open itself may wait the usual busy_timeout: nothing else runs yet): its
 * writes give way after WORKER_BUSY_TIMEOUT_MS, to be retried by whenWritable, or to fail and be retried by Temporal.
 */
export function giveWayToOtherWriters(db: StateDb): void {
  setBusyTimeout(db, WORKER_BUSY_TIMEOUT_MS);
}

/** A write that waited its whole bound for another writer's lock. */
export class StateDbBusyError extends StateDbError {
  override name = 'StateDbBusyError';
}

/** SQLite's "database is locked" (SQLITE_BUSY and its extended codes): another connection holds the write lock. */
export function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/**
 * Runs `write` (synchronous, safe to run again: see above) until it is not refused for the lock; between tries the
 * event loop is free. Any other error is thrown at once; a lock that stays taken past `retry.totalMs` throws a
 * StateDbBusyError naming `what`.
 */
export async function whenWritable<T>(what: string, write: () => T, retry: WriteRetry = WRITE_RETRY): Promise<T> {
  const startedAt = performance.now();
  for (let tries = 1; ; tries++) {
    try {
      return write();
    } catch (err) {
      if (!isBusy(err)) throw err;
      const waitedMs = performance.now() - startedAt;
      if (waitedMs >= retry.totalMs) {
        throw new StateDbBusyError(
          `state DB: ${what} waited ${Math.round(waitedMs / 1000)} s (${tries} tries) for another writer's lock and gave up`,
        );
      }
      const pauseMs = Math.min(exponentialBackoff(tries, retry.firstDelayMs, retry.maxDelayMs), retry.totalMs - waitedMs);
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }
}

/**
 * Writes that must land in the order they were made (a state, then the next), each waiting for the lock as
 * whenWritable does, none holding up its caller. A write that fails is told to `onFailed` and the next goes on.
 */
export class WriteQueue {
  private last: Promise<void> = Promise.resolve();

  constructor(private readonly onFailed: (what: string, err: unknown) => void) {}

  push(what: string, write: () => unknown, retry: WriteRetry = WRITE_RETRY): Promise<void> {
    this.last = this.last.then(() =>
      whenWritable(what, write, retry).then(
        () => undefined,
        (err: unknown) => this.onFailed(what, err),
      ),
    );
    return this.last;
  }

  /** Resolves once every write pushed so far has landed or failed. */
  drained(): Promise<void> {
    return this.last;
  }
}
