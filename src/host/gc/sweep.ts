/**
 * How every GC class runs: observe (any failure skips the whole class, so nothing is ever judged an orphan on
 * partial information), plan through src/policy/gc.ts, then carry out exactly the plan, or only report it in a
 * dry run. Removing something already gone counts as success, so a retried class is harmless.
 */
import pLimit from 'p-limit';
import { oneLine } from '../../text';
import type { Logger } from '../../log';
import type { Plan } from '../../policy/gc';
import type { GcClass, GcClassResult, GcFailure, GcItem } from '../../contracts/gc';

/** How many removals run at once: enough to hide round trips, few enough not to crowd the engine. */
export const REMOVAL_CONCURRENCY = 4;

export function classError(cls: GcClass, dryRun: boolean, error: string): GcClassResult {
  return { class: cls, dryRun, planned: [], removed: [], failed: [], skipped: [], kept: {}, error };
}

/** The observe step of a class: any throw here means the class is skipped this sweep (`skippedAs`). */
export async function observed<T>(
  log: Logger,
  cls: GcClass,
  dryRun: boolean,
  observe: () => Promise<T> | T,
): Promise<{ seen: T } | { skippedAs: GcClassResult }> {
  try {
    return { seen: await observe() };
  } catch (err) {
    log.warn('gc: class skipped, could not observe', { class: cls, error: oneLine(err) });
    return { skippedAs: classError(cls, dryRun, oneLine(err)) };
  }
}

/** Carries out a plan (or only reports it, in a dry run), logging every removal with class, name, age and reason. */
export async function carryOut<T>(
  log: Logger,
  cls: GcClass,
  dryRun: boolean,
  plan: Plan<T>,
  skipped: GcFailure[],
  remove: (t: T) => Promise<void> | void,
): Promise<GcClassResult> {
  const result: GcClassResult = { class: cls, dryRun, planned: [], removed: [], failed: [], skipped, kept: plan.kept };
  if (dryRun) {
    result.planned = plan.remove.map((p) => p.item);
    for (const item of result.planned) log.info('gc: would remove', { class: cls, ...logged(item) });
    return result;
  }
  const limit = pLimit(REMOVAL_CONCURRENCY);
  await Promise.all(
    plan.remove.map(({ item, target }) =>
      limit(async () => {
        try {
          await remove(target);
          result.removed.push(item);
          log.info('gc: removed', { class: cls, ...logged(item) });
        } catch (err) {
          result.failed.push({ name: item.name, error: oneLine(err) });
          log.warn('gc: removal failed, kept for the next sweep', { class: cls, ...logged(item), error: oneLine(err) });
        }
      }),
    ),
  );
  return result;
}

function logged(item: GcItem) {
  return { name: item.name, ...(item.id ? { id: item.id } : {}), ageSeconds: item.ageSeconds, reason: item.reason };
}
