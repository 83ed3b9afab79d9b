/**
 * Locks that processes of the suite take in turn (proper-lockfile: a directory beside `file`, refreshed while held,
 * taken over 60 s after a holder died without releasing it). No vitest imports.
 */
import lockfile from 'proper-lockfile';

/** Takes lock `file`, waiting at most `waitMs`; resolves to its release. `what` names what it guards, for the error. */
export async function takeLock(file: string, waitMs: number, what: string): Promise<() => Promise<void>> {
  try {
    return await lockfile.lock(file, {
      realpath: false,
      stale: 60_000,
      update: 10_000,
      retries: { retries: 100_000, minTimeout: 100, maxTimeout: 1000, maxRetryTime: waitMs },
    });
  } catch (err) {
    throw new Error(`${what} stayed taken for ${Math.round(waitMs / 1000)} s: ${(err as Error).message}`);
  }
}
