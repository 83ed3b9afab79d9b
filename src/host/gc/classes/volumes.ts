/** ah-db-, ah-env-, ah-kanban- and ah-pool- volumes that no row references and no staying container mounts. */
import { loadGcReferences } from '../../../db/gc';
import { ignoreNotFound } from '../../../docker/errors';
import { AH_NAME_PREFIX } from '../../../names';
import { planVolumes } from '../../../policy/gc';
import { ageGuard, gcClass, staying } from '../class';
import { viewOf } from '../../../watch/engine-view';

export const volumes = gcClass({
  name: 'volumes',
  words: 'orphan volumes',
  lookRequests: true,
  observe: async (deps) => ({
    refs: loadGcReferences(deps.db),
    volumes: await deps.docker.listVolumes(AH_NAME_PREFIX),
    containers: await viewOf(deps).containers(),
  }),
  plan: (seen, deps, input) => {
    const inUse = new Set(staying(seen.containers, input).flatMap((c) => c.volumes));
    return planVolumes(seen.volumes, seen.refs, inUse, ageGuard(deps));
  },
  // Never forced: the engine refuses a volume that a container uses, whatever the plan said.
  remove: (v, { docker }) => ignoreNotFound(() => docker.removeVolume(v.name)),
});
