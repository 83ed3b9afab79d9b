/** keeper_image_pulls: the background pull of each pooled template's image the engine lacked (see keeper_1704). */
import type { PullRecord } from '../policy/image-pull';
import type { StateDb } from './open';

const COLUMNS = `image, state, attempts, started_at AS startedAt, finished_at AS finishedAt, next_try_at AS nextTryAt, error,
  progress, owner_pid AS ownerPid, updated_at AS updatedAt`;

export function imagePull(db: StateDb, image: string): PullRecord | undefined {
  return db.prepare(`SELECT ${COLUMNS} FROM keeper_image_pulls WHERE image = ?`).get(image) as PullRecord | undefined;
}

export function imagePulls(db: StateDb): PullRecord[] {
  return db.prepare(`SELECT ${COLUMNS} FROM keeper_image_pulls ORDER BY image`).all() as PullRecord[];
}

/** Identifies one attempt: whose it is and when it began. */
export interface PullAttempt {
  image: string;
  ownerPid: number;
  startedAt: number;
}

/**
 * Makes the row say `pulling` under `attempt`, only if it is still what the caller decided on (`seen`, or no row):
 * of two processes that both decided to start, one does. Returns whether this one did.
 */
export function beginImagePull(db: StateDb, attempt: PullAttempt, seen: PullRecord | undefined): boolean {
  const attempts = seen && seen.state !== 'pulled' ? seen.attempts + 1 : 1;
  const { image, ownerPid, startedAt } = attempt;
  if (!seen) {
    return (
      db
        .prepare(
          `INSERT OR IGNORE INTO keeper_image_pulls (image, state, attempts, started_at, owner_pid, updated_at)
                       VALUES (?, 'pulling', ?, ?, ?, ?)`,
        )
        .run(image, attempts, startedAt, ownerPid, startedAt).changes === 1
    );
  }
  return (
    db
      .prepare(
        `UPDATE keeper_image_pulls SET state = 'pulling', attempts = ?, started_at = ?, finished_at = NULL, next_try_at = NULL,
       error = '', progress = '', owner_pid = ?, updated_at = ?
     WHERE image = ? AND state = ? AND attempts = ? AND started_at = ? AND owner_pid = ?`,
      )
      .run(attempts, startedAt, ownerPid, startedAt, image, seen.state, seen.attempts, seen.startedAt, seen.ownerPid).changes === 1
  );
}

const THIS_ATTEMPT = `image = ? AND state = 'pulling' AND owner_pid = ? AND started_at = ?`;

export function recordPullProgress(db: StateDb, attempt: PullAttempt, progress: string, now: number): void {
  db.prepare(`UPDATE keeper_image_pulls SET progress = ?, updated_at = ? WHERE ${THIS_ATTEMPT}`).run(
    progress,
    now,
    attempt.image,
    attempt.ownerPid,
    attempt.startedAt,
  );
}

/** Ends this attempt, unless another process has taken the row over since (then its outcome is the other's). */
export function finishImagePull(
  db: StateDb,
  attempt: PullAttempt,
  outcome: { state: 'pulled' } | { state: 'failed'; error: string; nextTryAt: number },
  now: number,
): boolean {
  const failed = outcome.state === 'failed';
  return (
    db
      .prepare(
        `UPDATE keeper_image_pulls SET state = ?, attempts = CASE WHEN ? THEN attempts ELSE 0 END, finished_at = ?,
       next_try_at = ?, error = ?, progress = '', updated_at = ? WHERE ${THIS_ATTEMPT}`,
      )
      .run(
        outcome.state,
        failed ? 1 : 0,
        now,
        failed ? outcome.nextTryAt : null,
        failed ? outcome.error : '',
        now,
        attempt.image,
        attempt.ownerPid,
        attempt.startedAt,
      ).changes === 1
  );
}

/**
 * Deletes an image's row only if it is still the one GC judged (same state and last update): a pull that began
 * or moved on since keeps its row. Returns whether it was deleted.
 */
export function deleteImagePull(db: StateDb, seen: Pick<PullRecord, 'image' | 'state' | 'updatedAt'>): boolean {
  return (
    db
      .prepare('DELETE FROM keeper_image_pulls WHERE image = ? AND state = ? AND updated_at = ?')
      .run(seen.image, seen.state, seen.updatedAt).changes === 1
  );
}
