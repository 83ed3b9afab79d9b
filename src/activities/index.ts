/**
 * All of keeper's activities, built for one host. Workflows import only the *type* of this factory's result
 * (`proxyActivities<Activities>`), so no side-effecting code ever enters the workflow bundle.
 */
import type { ActivityDeps } from './deps';
import { createCircuitActivities } from './circuit';
import { createDiskActivities } from './disk';
import { createGcActivities } from './gc';
import { createHealthActivities } from './health';
import { createPoolActivities } from './pool';
import { createReconcileActivities } from './reconcile';

export type { ActivityDeps } from './deps';

export function createActivities(deps: ActivityDeps) {
  return {
    ...createHealthActivities(deps),
    ...createPoolActivities(deps),
    ...createDiskActivities(deps),
    ...createGcActivities(deps),
    ...createReconcileActivities(deps),
    ...createCircuitActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
