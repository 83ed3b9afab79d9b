/**
 * Running where ah runs: keeper finds out when another writer counts crashes on its state DB (src/db/crash-writers.ts)
 * and says so, once per change in the log (keeper_reported_conditions) and in `keeper status`.
 */
import { crashesCountedByOthers } from '../db/crash-writers';
import { keeperArrivedAt } from '../db/keeper-hosts';
import { otherWriterCondition, type ServiceCountedByOthers } from '../policy/other-writer';
import { reportConditions } from './conditions';
import type { HostDeps } from './deps';

const LOOP = 'other-writer';

/** The services another writer counted crashes of; none before a keeper worker has started on this DB. */
export function servicesCountedByOthers({ db, settings }: Pick<HostDeps, 'db' | 'settings'>): ServiceCountedByOthers[] {
  const arrivedAt = keeperArrivedAt(db);
  if (arrivedAt === null) return [];
  return crashesCountedByOthers(db, arrivedAt, settings.crashRecordMaxPerService);
}

/** The reconcile tick's check: logs the condition when it appears or changes, and when it clears. */
export function reportOtherWriter(deps: Pick<HostDeps, 'db' | 'log' | 'settings' | 'clock'>): ServiceCountedByOthers[] {
  const found = servicesCountedByOthers(deps);
  const condition = otherWriterCondition(found);
  reportConditions(deps, LOOP, condition ? [condition] : []);
  return found;
}
