/** Dangling images that carry an ah. label and that no staying container uses. */
import { ignoreNotFound } from '../../../docker/errors';
import { planDanglingImages } from '../../../policy/gc';
import { ageGuard, gcClass, staying } from '../class';
import { viewOf } from '../../../watch/engine-view';

export const images = gcClass({
  name: 'images',
  words: 'dangling ah images',
  lookRequests: true,
  observe: async (deps) => ({ images: await deps.docker.listDanglingImages(), containers: await viewOf(deps).containers() }),
  plan: (seen, deps, input) => {
    const usedBy = new Set(staying(seen.containers, input).map((c) => c.imageId));
    return planDanglingImages(seen.images, usedBy, ageGuard(deps));
  },
  remove: (i, { docker }) => ignoreNotFound(() => docker.removeImage(i.id)),
});
