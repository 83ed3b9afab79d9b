/**
 * Patch ids shared by the loop workflows. Deterministic: workflow code imports it.
 * `loop-local-activities`: a loop run is one workflow task of local activities (observe, and act only when there
 * is something to do) instead of a chain of remote activities; runs started before it replay the old chain.
 */
export const LOCAL_LOOPS_PATCH = 'loop-local-activities';
