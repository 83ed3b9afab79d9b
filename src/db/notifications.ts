/** keeper_notifications: how each alert's delivery to each webhook ended (see keeper_1402). */
import type { StateDb } from './open';

export interface NotificationOutcome {
  eventKey: string;
  targetId: string;
  targetShown: string;
  kind: string;
  serviceId: string;
  outcome: 'delivered' | 'failed';
  attempts: number;
  error: string;
  finishedAt: number; // unix seconds
}

/** Outcomes are kept this long, so the table stays small whatever the number of alerts. */
export const NOTIFICATION_OUTCOME_RETENTION_S = 30 * 86_400;

/** Records the outcomes (a repeated record of the same event and target replaces it) and drops old ones. */
export function recordNotificationOutcomes(db: StateDb, outcomes: NotificationOutcome[], nowSec: number): void {
  const upsert =
    db.prepare(`INSERT INTO keeper_notifications (event_key, target_id, target_shown, kind, service_id, outcome, attempts, error, finished_at)
      VALUES (@eventKey, @targetId, @targetShown, @kind, @serviceId, @outcome, @attempts, @error, @finishedAt)
      ON CONFLICT (event_key, target_id) DO UPDATE SET outcome = excluded.outcome, attempts = excluded.attempts,
        error = excluded.error, finished_at = excluded.finished_at, target_shown = excluded.target_shown`);
  db.transaction(() => {
    for (const o of outcomes) upsert.run(o);
    db.prepare('DELETE FROM keeper_notifications WHERE finished_at < ?').run(nowSec - NOTIFICATION_OUTCOME_RETENTION_S);
  }).immediate();
}

const NOTIFICATION_SELECT = `SELECT event_key AS eventKey, target_id AS targetId, target_shown AS targetShown, kind, service_id AS serviceId,
    outcome, attempts, error, finished_at AS finishedAt FROM keeper_notifications`;

/** How many deliveries ended each way since `sinceSec`. */
export function notificationCounts(db: StateDb, sinceSec: number): { delivered: number; failed: number } {
  return db
    .prepare(
      `SELECT COALESCE(SUM(outcome = 'delivered'), 0) AS delivered, COALESCE(SUM(outcome = 'failed'), 0) AS failed
                     FROM keeper_notifications WHERE finished_at >= ?`,
    )
    .get(sinceSec) as { delivered: number; failed: number };
}

/** The newest failed delivery since `sinceSec`, if any. */
export function lastFailedNotification(db: StateDb, sinceSec: number): NotificationOutcome | undefined {
  return db
    .prepare(`${NOTIFICATION_SELECT} WHERE outcome = 'failed' AND finished_at >= ? ORDER BY finished_at DESC LIMIT 1`)
    .get(sinceSec) as NotificationOutcome | undefined;
}
