/**
 * The embedded dev server's fixed ports (7233, its UI on 8233) are the machine's, not a run's: two runs of the suite
 * at once, from two checkouts, would each start `npm start`'s server there, and the second fails to bind. The files
 * that take them (test/groups.ts lists them as serial) hold a lock of the machine's while they run, so runs take
 * turns; within one run the serial group already runs them one at a time.
 */
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { takeLock } from './locks';

const LOCK = path.join(os.tmpdir(), 'keeper-test-embedded-ports');
const WAIT_MS = 10 * 60_000;

/** Holds the machine's lock on the embedded server's ports from before the file's tests until after them. */
export function embeddedPortsForFile(): void {
  let release: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    release = await takeLock(LOCK, WAIT_MS, "the embedded server's ports (another run's file holds them)");
  }, WAIT_MS + 30_000);
  afterAll(() => release?.());
}
