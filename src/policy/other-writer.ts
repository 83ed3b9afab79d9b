/**
 * Another writer counting crashes on keeper's state DB (ah's reconciler, left running beside keeper): both count
 * each death, circuits open at half the threshold, and both act on them. A condition of the reconcile tick,
 * logged once when it appears or its services change, and once when it clears. Pure.
 */
import type { Condition } from './conditions';

export const BESIDE_AH_DOC = 'docs/running-beside-ah.md';
export const OTHER_WRITER_SUBJECT = 'crash-count-writer';

export interface ServiceCountedByOthers {
  serviceId: string;
  crashCount: number;
  keeperCounted: number;
}

export function otherWriterCondition(found: ServiceCountedByOthers[]): Condition | undefined {
  if (found.length === 0) return undefined;
  const ids = found.map((f) => f.serviceId);
  const detail = found
    .slice(0, 5)
    .map((f) => `${f.serviceId} ${f.crashCount} (keeper counted ${f.keeperCounted})`)
    .join(', ');
  const more = found.length > 5 ? ` and ${found.length - 5} more` : '';
  return {
    subject: OTHER_WRITER_SUBJECT,
    state: ids.join(','),
    message:
      `another writer counts crashes on this state DB (crash_count above keeper's records: ${detail}${more}); ` +
      `ah's reconciler is probably still running: stop ah's reconciler, GC and warm pool loops (see ${BESIDE_AH_DOC})`,
    cleared: "no crash count on this state DB is above keeper's own records any more",
    summary: `another writer counts crashes (${ids.length} service${ids.length === 1 ? '' : 's'}): stop ah's loops, see ${BESIDE_AH_DOC}`,
  };
}
