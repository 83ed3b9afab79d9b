/**
 * The GC loop's look: a dry run of every class whose entry asks for it (exactly what `keeper gc --dry-run`
 * plans, every age and ownership guard included), in the worker, quietly. A resource that has just passed its age
 * guard is found here and swept within one look; a look that plans nothing costs no Temporal action. Classes that
 * only trim keeper's own rows (crash, image-pull and orphan records) say so in their entry, and are left to the sweeps
 * the schedule makes: trimming a table by a row is no reason for a run of its own. A class that could not observe (an
 * engine that does not answer, an unreadable directory) makes the look fail, naming the class and its error: a
 * dry run that saw nothing of a class has not found "nothing to do" there. What the other classes found is requested.
 */
import type { GcClassResult } from '../../contracts/gc';
import type { Logger } from '../../log';
import { EngineView } from '../../watch/engine-view';
import { itemsOf, type Finding } from '../../watch/finding';
import type { GcDeps } from './class';
import { GC_CLASSES, sweepOnHost } from './registry';

/** A dry run writes a line per planned resource; a look every minute must not. */
const QUIET: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => QUIET };

const LOOKED_AT = GC_CLASSES.filter((c) => c.lookRequests);

export async function lookForGc(deps: GcDeps, view: EngineView = new EngineView(deps.docker)): Promise<Finding> {
  const results = await sweepOnHost({ ...deps, log: QUIET, view }, true, LOOKED_AT);
  const keys = results.flatMap((r) => r.planned.map((p) => `gc-${r.class}:${p.id?.slice(0, 12) ?? p.name}`));
  const blind = results.filter((r) => r.error !== undefined);
  return { items: itemsOf(keys), ...(blind.length > 0 ? { failed: blindWords(blind) } : {}) };
}

/** The classes that could not observe, in one line: the first with its error, and how many more. */
function blindWords(blind: GcClassResult[]): string {
  const [first, ...more] = blind;
  const others = more.length === 0 ? '' : ` (and ${more.map((r) => r.class).join(', ')})`;
  return `gc class ${first.class} could not observe${others}: ${first.error}`;
}
