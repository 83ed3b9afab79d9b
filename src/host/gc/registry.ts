/**
 * The garbage collector's classes: the one list. A sweep asks for it (the gcSweep workflow through a local
 * activity, whose result its history records), runs each class through one generic activity, and reports them
 * in this order; `keeper gc --help` joins their words; the worker's GC look runs those that ask for a sweep; the
 * metrics count removals by class. Adding a class: its file in classes/ (see class.ts), and one line here.
 */
import type { GcClassListed, GcClassResult } from '../../contracts/gc';
import { sweepInStages } from '../../policy/gc';
import type { GcClassEntry, GcDeps } from './class';
import { buildDirs } from './classes/build-dirs';
import { buildImages } from './classes/build-images';
import { containers } from './classes/containers';
import { crashRecords } from './classes/crash-records';
import { imagePullRecords } from './classes/image-pulls';
import { images } from './classes/images';
import { networks } from './classes/networks';
import { orphanRecords } from './classes/orphan-records';
import { snapshots } from './classes/snapshots';
import { volumes } from './classes/volumes';

export const GC_CLASSES = [
  containers,
  volumes,
  networks,
  images,
  buildImages,
  buildDirs,
  snapshots,
  crashRecords,
  imagePullRecords,
  orphanRecords,
] as const satisfies readonly GcClassEntry[];

const BY_NAME = new Map<string, GcClassEntry>(GC_CLASSES.map((c) => [c.name, c]));

/** The class of that name, or undefined: names come from a sweep's recorded list, which may be another build's. */
export function gcClassNamed(name: string): GcClassEntry | undefined {
  return BY_NAME.get(name);
}

/** What a sweep needs to know of each class: the gcClasses activity's answer. */
export function listGcClasses(): GcClassListed[] {
  return GC_CLASSES.map((c) => ({ name: c.name, runsFirst: c.runsFirst }));
}

/** The classes in an operator's words: what `keeper gc` sweeps. */
export function gcClassWords(): string {
  return GC_CLASSES.map((c) => c.words).join(', ');
}

/**
 * A sweep of `classes` on this host, in the workflow's order, without Temporal: the worker's GC look (a quiet dry
 * run) and bench:gc.
 */
export function sweepOnHost(deps: GcDeps, dryRun: boolean, classes: readonly GcClassEntry[] = GC_CLASSES): Promise<GcClassResult[]> {
  const byName = new Map(classes.map((c) => [c.name, c]));
  return sweepInStages(classes, dryRun, (cls, input) => byName.get(cls)!.run(deps, input));
}
