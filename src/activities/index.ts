/**
 * All of keeper's activities, built for one host: thin adapters over the host operations in src/host/. Workflows
 * import only the *type* of this factory's result (`proxyActivities<Activities>`), so no side-effecting code ever
 * enters the workflow bundle.
 */
import type { HostDeps } from '../host/deps';
import { createCircuitActivities } from './circuit';
import { createGcActivities } from './gc';
import { createHealthActivities } from './health';
import { createNotifyActivities } from './notify';
import { createPoolActivities } from './pool';
import { createReconcileActivities } from './reconcile';

export function createActivities(deps: HostDeps) {
  return {
    ...createHealthActivities(deps),
    ...createPoolActivities(deps),
    ...createGcActivities(deps),
    ...createReconcileActivities(deps),
    ...createCircuitActivities(deps),
    ...createNotifyActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
