/** keeper_reported_conditions: the expected conditions each loop of each host last logged (see keeper_1601). */
import { conditionChanges, type ConditionChanges, type ReportableCondition, type Unchecked } from '../policy/conditions';
import type { StateDb } from './open';

export interface ReportedCondition extends ReportableCondition {
  since: number; // unix seconds
}

export function reportedConditions(db: StateDb, hostId: string, loop: string): ReportedCondition[] {
  return db
    .prepare(
      `SELECT subject, state, message, cleared, since FROM keeper_reported_conditions
                     WHERE host_id = ? AND loop = ? ORDER BY subject`,
    )
    .all(hostId, loop) as ReportedCondition[];
}

/**
 * Makes `found` the loop's reported conditions (keeping the unchecked ones) and returns what changed, in one
 * IMMEDIATE transaction: of two runs (or a retried activity) only one sees a change, so each is logged once.
 */
export function replaceConditions(
  db: StateDb,
  c: { hostId: string; loop: string; now: number },
  found: ReportableCondition[],
  unchecked?: Unchecked,
): ConditionChanges<ReportedCondition> {
  return db
    .transaction((): ConditionChanges<ReportedCondition> => {
      const changes = conditionChanges(reportedConditions(db, c.hostId, c.loop), found, unchecked);
      const remove = db.prepare('DELETE FROM keeper_reported_conditions WHERE host_id = ? AND loop = ? AND subject = ?');
      for (const gone of changes.cleared) remove.run(c.hostId, c.loop, gone.subject);
      const upsert = db.prepare(`INSERT INTO keeper_reported_conditions (host_id, loop, subject, state, message, cleared, since)
                               VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (host_id, loop, subject) DO UPDATE SET
                               state = excluded.state, message = excluded.message, cleared = excluded.cleared, since = excluded.since`);
      for (const r of changes.raised) upsert.run(c.hostId, c.loop, r.subject, r.state, r.message, r.cleared, c.now);
      return changes;
    })
    .immediate();
}
