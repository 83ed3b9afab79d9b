/** ah-tenant-* networks with nothing attached (read from an inspect, W-G1) and no container configured on them. */
import { oneLine } from '../../../text';
import type { ContainerUsage } from '../../../docker/engine';
import { DockerError } from '../../../docker/errors';
import { ignoreNotFound } from '../../../docker/errors';
import { TENANT_NETWORK_PREFIX, TRAEFIK_CONTAINER } from '../../../names';
import { planNetworks, type NetworkObs } from '../../../policy/gc';
import type { GcFailure } from '../../../contracts/gc';
import { ageGuard, gcClass, staying, type GcDeps } from '../class';
import { viewOf } from '../../../watch/engine-view';

export const networks = gcClass({
  name: 'networks',
  words: 'empty tenant networks',
  lookRequests: true,
  observe: async (deps, input) => {
    const [list, containers] = [await deps.docker.listNetworks(TENANT_NETWORK_PREFIX), await viewOf(deps).containers()];
    return inspectNetworks(deps, list, staying(containers, input), new Set(input.goneContainers ?? []));
  },
  plan: (seen, deps) => planNetworks(seen.observations, ageGuard(deps)),
  remove: (n, { docker }) =>
    ignoreNotFound(async () => {
      if (n.attached.includes(TRAEFIK_CONTAINER)) await ignoreNotFound(() => docker.disconnectNetwork(n.id, TRAEFIK_CONTAINER));
      await docker.removeNetwork(n.id);
    }),
});

/** Only an inspect reports who is attached; a network that cannot be inspected is skipped, never judged empty. */
async function inspectNetworks(
  { docker, log }: GcDeps,
  list: { id: string; name: string }[],
  stay: ContainerUsage[],
  gone: Set<string>,
): Promise<{ observations: NetworkObs[]; skipped: GcFailure[] }> {
  const observations: NetworkObs[] = [];
  const skipped: GcFailure[] = [];
  for (const n of list) {
    try {
      const details = await docker.inspectNetwork(n.id);
      observations.push({
        id: n.id,
        name: details.name,
        createdAt: details.createdAt,
        attached: details.containers.filter((c) => !gone.has(c.id)).map((c) => c.name),
        configuredOn: stay.filter((c) => c.networks.includes(details.name) || c.networks.includes(n.id)).map((c) => c.name),
      });
    } catch (err) {
      if (err instanceof DockerError && err.isNotFound) continue; // removed meanwhile: nothing to do
      skipped.push({ name: n.name, error: oneLine(err) });
      log.warn('gc: network skipped, could not inspect', { class: 'networks', name: n.name, error: oneLine(err) });
    }
  }
  return { observations, skipped };
}
