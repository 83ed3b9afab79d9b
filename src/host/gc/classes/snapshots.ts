/** Snapshots over the per-service count (first) or the age limit, unless a service or container runs the image. */
import { deleteSnapshotRow, listSnapshotRows, loadGcReferences } from '../../../db/gc';
import { ignoreNotFound } from '../../../docker/errors';
import { planSnapshots } from '../../../policy/gc';
import { unixSeconds } from '../../../time';
import { gcClass, staying } from '../class';
import { viewOf } from '../../../watch/engine-view';

export const snapshots = gcClass({
  name: 'snapshots',
  words: 'expired snapshots',
  lookRequests: true,
  observe: async (deps) => ({
    rows: listSnapshotRows(deps.db),
    refs: loadGcReferences(deps.db),
    containers: await viewOf(deps).containers(),
  }),
  plan: (seen, { settings, clock }, input) => {
    const runningRefs = new Set([...seen.refs.serviceImages, ...staying(seen.containers, input).map((c) => c.image)]);
    return planSnapshots(seen.rows, runningRefs, {
      now: unixSeconds(clock),
      maxPerService: settings.snapshotMaxPerService,
      maxAgeSeconds: Math.floor(settings.snapshotMaxAgeMs / 1000),
    });
  },
  remove: async (s, { db, docker }) => {
    // The row goes only once its tag is gone, so a refused untag is retried next sweep (W-G8).
    if (s.imageRef) await ignoreNotFound(() => docker.removeImage(s.imageRef));
    deleteSnapshotRow(db, s.id, s.tenantId);
  },
});
