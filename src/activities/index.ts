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
import { createPoolActivities, type PoolRefillRequester } from './pool';
import { createReconcileActivities } from './reconcile';

/** `requestPoolRefill`: how a background image pull requests a refill (the worker's host wires it to its schedule). */
export function createActivities(deps: HostDeps, hooks: { requestPoolRefill?: PoolRefillRequester } = {}) {
  return {
    ...createHealthActivities(deps),
    ...createPoolActivities(deps, hooks.requestPoolRefill),
    ...createGcActivities(deps),
    ...createReconcileActivities(deps),
    ...createCircuitActivities(deps),
    ...createNotifyActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
