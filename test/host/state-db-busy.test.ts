/**
 * Waiting for another writer's lock without stalling the event loop (src/db/busy.ts), on a real SQLite file whose
 * write lock a second connection holds (BEGIN IMMEDIATE), as ah's would. In one process: the holder lets go on a
 * timer, which runs only if the waiting write leaves the event loop free. A worker waiting on a lock held by another
 * process is test/watch/sqlite-lock.test.ts.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { giveWayToOtherWriters, isBusy, StateDbBusyError, whenWritable, WriteQueue } from '../../src/db/busy';
import type { StateDb } from '../../src/db/open';
import { freshDb } from '../helpers/fixtures';

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** A worker's connection to a fresh state DB, and another connection that takes its write lock. */
function twoWriters(): { db: StateDb; hold: (ms: number) => Promise<void> } {
  const { db, file } = freshDb();
  giveWayToOtherWriters(db);
  db.exec('CREATE TABLE t (n INTEGER)');
  const other = new Database(file);
  closers.push(() => (other.inTransaction && other.exec('ROLLBACK'), other.close(), db.close()));
  const hold = (ms: number) => {
    other.exec('BEGIN IMMEDIATE');
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => (other.exec('COMMIT'), resolve()), ms);
      closers.unshift(() => clearTimeout(timer)); // a test that ends first: the timer goes before the connections
    });
  };
  return { db, hold };
}

/** The longest gap between the ticks of a 10 ms interval while `work` runs: how long the event loop was held. */
async function longestStall(work: Promise<unknown>): Promise<number> {
  let last = performance.now();
  let longest = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 10);
  try {
    await work;
  } finally {
    clearInterval(timer);
  }
  return longest;
}

describe("a write that meets another writer's lock", () => {
  it('is refused at once by a bare write (SQLITE_BUSY after the short busy_timeout), not after seconds', () => {
    const { db, hold } = twoWriters();
    void hold(500);
    const startedAt = performance.now();
    let refusal: unknown;
    try {
      db.prepare('INSERT INTO t VALUES (1)').run();
    } catch (err) {
      refusal = err;
    }
    expect(isBusy(refusal)).toBe(true);
    expect(performance.now() - startedAt).toBeLessThan(500);
  });

  it('waits, awaited, until the lock is free, and lands; the event loop runs meanwhile', async () => {
    const { db, hold } = twoWriters();
    const released = hold(800);
    const startedAt = performance.now();
    const stall = await longestStall(whenWritable('a row', () => db.prepare('INSERT INTO t VALUES (1)').run()));
    const tookMs = performance.now() - startedAt;
    await released;
    expect(tookMs).toBeGreaterThanOrEqual(750); // it did wait for the lock
    expect(stall).toBeLessThan(700); // never blocked for long: the busy_timeout, a pause, a timer late on a busy machine
    expect(db.prepare('SELECT COUNT(*) FROM t').pluck().get()).toBe(1);
  });

  it('gives up once its bound runs out, in one line that says what waited and how long', async () => {
    const { db, hold } = twoWriters();
    void hold(1_000);
    const retry = { firstDelayMs: 20, maxDelayMs: 100, totalMs: 600 };
    const err = await whenWritable('the event cursor', () => db.prepare('INSERT INTO t VALUES (1)').run(), retry).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateDbBusyError);
    expect((err as Error).message).toMatch(/^state DB: the event cursor waited 1 s \(\d+ tries\) for another writer's lock and gave up$/);
  });

  it('throws any other error at once', async () => {
    const { db } = twoWriters();
    await expect(whenWritable('a row', () => db.prepare('INSERT INTO nope VALUES (1)').run())).rejects.toThrow(/no such table: nope/);
  });

  it('keeps its order in a write queue, which tells a failure and goes on', async () => {
    const { db, hold } = twoWriters();
    const failed: string[] = [];
    const queue = new WriteQueue((what) => void failed.push(what));
    void hold(300);
    for (const n of [1, 2, 3]) void queue.push(`row ${n}`, () => db.prepare('INSERT INTO t VALUES (?)').run(n));
    void queue.push('a bad row', () => db.prepare('INSERT INTO nope VALUES (1)').run());
    void queue.push('row 4', () => db.prepare('INSERT INTO t VALUES (4)').run());
    await queue.drained();
    expect(db.prepare('SELECT n FROM t ORDER BY rowid').pluck().all()).toEqual([1, 2, 3, 4]);
    expect(failed).toEqual(['a bad row']);
  });
});
