/**
 * What crosses the gcSweep workflow's boundary: one class's input and result, and the sweep's result that
 * `keeper gc --once` prints and `keeper status` reads back; and the names of the per-class activities that sweeps
 * from before the class registry call. Types and plain constants.
 */

/**
 * A GC class's name, as the registry (src/host/gc/registry.ts) gives it. A plain string here: a sweep runs the
 * list of classes its run recorded, which may be another build's, so the workflow side cannot know the names at
 * compile time; the host side checks every name it is given against the registry.
 */
export type GcClass = string;

/** One class as the sweep sees it: its name, and whether it runs before the others (see GcClassEntry.runsFirst). */
export interface GcClassListed {
  name: GcClass;
  runsFirst: boolean;
}

/**
 * The one activity per class of sweeps started before the class registry (patch `gc-class-registry`): their
 * histories name these activities, so the worker keeps them registered (generated from the registry by class).
 * History: never changes, and no class is added here.
 */
export const PER_CLASS_ACTIVITIES = {
  containers: 'removeOrphanContainers',
  volumes: 'removeOrphanVolumes',
  networks: 'removeEmptyTenantNetworks',
  images: 'removeDanglingImages',
  buildDirs: 'removeOldBuildDirs',
  snapshots: 'removeExpiredSnapshots',
  crashRecords: 'removeOldCrashRecords',
  buildImages: 'removeBuildImages',
} as const;
export type PerClassActivity = (typeof PER_CLASS_ACTIVITIES)[keyof typeof PER_CLASS_ACTIVITIES];

/** Why a resource is kept. Results count these, so an operator sees why nothing happened. */
export type KeepReason =
  | 'foreign' // not ah's: no ah label / prefix, or an ah kind GC does not collect
  | 'referenced' // a DB row references it
  | 'in-use' // a container that stays uses it
  | 'young' // younger than the age guard
  | 'age-unknown' // the engine gave no creation time: treated as young
  | 'not-empty' // a network with attached containers
  | 'image-in-use' // a snapshot or build image that a service or container still runs
  | 'unattributed' // a build image whose repository names no service row keeper can find
  | 'within-limits' // a snapshot, crash record or build image inside the retention limits
  | 'symlink' // a build-dir entry that is a symlink: never followed
  | 'not-a-directory'
  | 'hidden' // a build-dir entry whose name starts with '.'
  | 'outside-base' // a build dir that resolves outside the base
  | 'present'; // a record of something that still exists (a service row, a container on the engine)

/** One planned (or done) removal: what, how old, and why. */
export interface GcItem {
  name: string;
  id?: string;
  ageSeconds: number;
  reason: string;
}

export interface GcClassInput {
  dryRun: boolean;
  /**
   * Containers that earlier steps of this sweep removed (or, in a dry run, would remove). They no longer hold
   * volumes, networks, images or snapshot refs, so a dry run plans what the real run will find.
   */
  goneContainers?: string[];
}

/** What the generic class activity (`runGcClass`) is given: the class by name, and its input. */
export interface GcClassRun extends GcClassInput {
  cls: GcClass;
}

export interface GcFailure {
  name: string;
  error: string;
}

export interface GcClassResult {
  class: GcClass;
  dryRun: boolean;
  /** Dry run: what a real run would remove now. Real run: empty (see removed and failed). */
  planned: GcItem[];
  removed: GcItem[];
  /** Removals the engine or the file system refused; the resource stays for the next sweep. */
  failed: GcFailure[];
  /** Resources skipped because they could not be read (engine or DB error on that resource). */
  skipped: GcFailure[];
  kept: Partial<Record<KeepReason, number>>;
  /** Set when the class could not be observed at all: nothing of it was judged or removed. */
  error?: string;
}

export interface GcSweepOptions {
  /** Plan only: remove nothing, return what a real sweep would remove now. */
  dryRun?: boolean;
}

export interface GcClassSummary {
  class: GcClass;
  planned: number;
  removed: number;
  failed: number;
  skipped: number;
  error?: string;
}

export interface GcSweepResult {
  dryRun: boolean;
  classes: GcClassResult[];
  summary: GcClassSummary[];
  totals: { planned: number; removed: number; failed: number; skipped: number; classErrors: number };
}
