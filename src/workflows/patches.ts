/**
 * Every patch id the workflows call `patched()` with, and which workflows call it. Deterministic: workflow code
 * imports it. A run recorded without a patch replays the old command sequence, a new run takes the new one, so
 * an id, once shipped, never changes. `test/workflows/replay.test.ts` wants a recorded history of both sides of
 * each patch listed here, and docs/upgrade.md lists them.
 */

/** A loop run is one workflow task of local activities (observe, and act only when there is something to do). */
export const LOCAL_LOOPS_PATCH = 'loop-local-activities';

/** A refill first detaches claimed environments still on the pool network. */
export const DETACH_CLAIMED_PATCH = 'detach-claimed-from-pool';

/** A circuit sets its memo (the deaths that opened it) and alerts the host's webhooks. */
export const CIRCUIT_ALERTS_PATCH = 'circuit-evidence-and-alerts';

/** The per-class sweep (runs before GC_CLASS_REGISTRY_PATCH) gained the crash-record class. */
export const GC_CRASH_RECORDS_PATCH = 'gc-crash-records';

/** The per-class sweep (runs before GC_CLASS_REGISTRY_PATCH) gained the build-image class. */
export const GC_BUILD_IMAGES_PATCH = 'gc-build-images';

/**
 * A sweep asks a local activity for the host's GC classes and runs each through one generic activity: the list
 * is recorded, so a class added later needs no patch of its own. Runs before it replay one activity per class.
 */
export const GC_CLASS_REGISTRY_PATCH = 'gc-class-registry';

/**
 * Circuits go by their opening's number, not their escalation: a circuit run alerts by opening (its notify workflow
 * ids and keys) and recovers that opening; a tick that finds a run of an older opening holding the circuit's id
 * signals it to look again. Runs before it alert by generation and signal nothing.
 */
export const CIRCUIT_OPENINGS_PATCH = 'circuit-openings';

/** Each patch and the workflow types that call it. */
export const PATCHES: readonly { id: string; workflows: readonly string[] }[] = [
  { id: DETACH_CLAIMED_PATCH, workflows: ['poolRefill'] },
  { id: GC_CRASH_RECORDS_PATCH, workflows: ['gcSweep'] },
  { id: GC_BUILD_IMAGES_PATCH, workflows: ['gcSweep'] },
  { id: CIRCUIT_ALERTS_PATCH, workflows: ['circuitBreaker'] },
  { id: LOCAL_LOOPS_PATCH, workflows: ['reconcileTick', 'poolRefill', 'gcSweep'] },
  { id: GC_CLASS_REGISTRY_PATCH, workflows: ['gcSweep'] },
  { id: CIRCUIT_OPENINGS_PATCH, workflows: ['circuitBreaker', 'reconcileTick', 'reconcileOnEvents'] },
];
