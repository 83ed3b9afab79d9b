/**
 * Logs a loop's expected conditions once: a warning when one appears or changes, a line when it clears, nothing
 * while it stays as it was (src/policy/conditions.ts). What was last logged is kept in the state DB, per host.
 */
import { replaceConditions } from '../db/conditions';
import type { ConditionChanges, ReportableCondition, Unchecked } from '../policy/conditions';
import { unixSeconds } from '../time';
import type { HostDeps } from './deps';

export function reportConditions(
  deps: Pick<HostDeps, 'db' | 'log' | 'settings' | 'clock'>,
  loop: string,
  found: ReportableCondition[],
  unchecked?: Unchecked,
): ConditionChanges {
  const changes = replaceConditions(deps.db, { hostId: deps.settings.hostId, loop, now: unixSeconds(deps.clock) }, found, unchecked);
  for (const c of changes.raised) deps.log.warn(c.message, { loop, condition: c.subject });
  for (const c of changes.cleared) deps.log.info(c.cleared, { loop, condition: c.subject });
  return changes;
}
