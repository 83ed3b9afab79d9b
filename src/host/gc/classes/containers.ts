/** ah containers of every kind that no row of any table references: stopped, then removed. */
import { loadGcReferences } from '../../../db/gc';
import { ignoreNotFound } from '../../../docker/errors';
import { needsStop, planContainers } from '../../../policy/gc';
import { ageGuard, gcClass } from '../class';
import { viewOf } from '../../../watch/engine-view';

/** Grace a running orphan gets to stop before it is removed. */
const STOP_GRACE_SECONDS = 10;

export const containers = gcClass({
  name: 'containers',
  words: 'orphan containers',
  runsFirst: true,
  lookRequests: true,
  observe: async (deps) => ({ refs: loadGcReferences(deps.db), containers: await viewOf(deps).containers() }),
  plan: (seen, deps) => planContainers(seen.containers, seen.refs, ageGuard(deps)),
  remove: (c, { docker }) =>
    ignoreNotFound(async () => {
      if (needsStop(c.state)) await docker.stopContainer(c.id, STOP_GRACE_SECONDS);
      await docker.removeContainer(c.id, { force: false });
    }),
});
