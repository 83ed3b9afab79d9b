/**
 * The activities of this host that belong to no loop: its health check, its circuits, its alerts. Each loop's own
 * activities come with its unit (src/loops/), and the worker registers them all from the loops' registry
 * (src/loops/registry.ts, createActivities). Workflows import only the *types* of these factories' results
 * (`proxyActivities<…>`), so no side-effecting code ever enters the workflow bundle.
 */
import type { HostDeps } from '../host/deps';
import { createCircuitActivities } from './circuit';
import { createHealthActivities } from './health';
import { createNotifyActivities } from './notify';

export function createHostActivities(deps: HostDeps) {
  return {
    ...createHealthActivities(deps),
    ...createCircuitActivities(deps),
    ...createNotifyActivities(deps),
  };
}

export type HostActivities = ReturnType<typeof createHostActivities>;
