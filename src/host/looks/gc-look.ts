/**
 * The GC loop's local look: a dry run of every class whose entry asks for it (exactly what `keeper gc --dry-run`
 * plans, every age and ownership guard included), in the worker, quietly. A resource that has just passed its age
 * guard is found here and swept within one look; a look that plans nothing costs no Temporal action. Classes that
 * only trim keeper's own rows (crash, image-pull and orphan records) say so in their entry, and are left to the sweeps
 * the schedule makes: trimming a table by a row is no reason for a run of its own.
 */
import type { Logger } from '../../log';
import { EngineView } from '../engine-view';
import type { GcDeps } from '../gc/class';
import { GC_CLASSES, sweepOnHost } from '../gc/registry';
import type { Finding } from './finding';

/** A dry run writes a line per planned resource; a look every minute must not. */
const QUIET: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => QUIET };

const LOOKED_AT = GC_CLASSES.filter((c) => c.lookAsks);

export async function lookForGc(deps: GcDeps, view: EngineView = new EngineView(deps.docker)): Promise<Finding> {
  const results = await sweepOnHost({ ...deps, log: QUIET, view }, true, LOOKED_AT);
  const items = results.flatMap((r) => r.planned.map((p) => `gc-${r.class}:${p.id?.slice(0, 12) ?? p.name}`));
  return { items, changes: [] };
}
