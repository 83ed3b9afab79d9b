/**
 * ah's build images (127.0.0.1:5000/ah/<tenant>-<service>): untagged ones past the age guard, and tags beyond the
 * newest --build-images-per-service of each service. Never one a staying container uses or a service row names.
 */
import { loadBuildAttribution, loadGcReferences } from '../../../db/gc';
import { ignoreNotFound } from '../../../docker/errors';
import { BUILD_IMAGE_REPO_PREFIX } from '../../../names';
import { planBuildImages } from '../../../policy/gc';
import { ageGuard, gcClass, staying } from '../class';
import { viewOf } from '../../../watch/engine-view';

export const buildImages = gcClass({
  name: 'buildImages',
  words: 'ah build images (untagged, and tags beyond --build-images-per-service)',
  lookRequests: true,
  observe: async (deps) => ({
    by: loadBuildAttribution(deps.db),
    refs: loadGcReferences(deps.db),
    images: await deps.docker.listImagesUnder(BUILD_IMAGE_REPO_PREFIX),
    containers: await viewOf(deps).containers(),
  }),
  plan: (seen, deps, input) => {
    const stay = staying(seen.containers, input);
    return planBuildImages(seen.images, seen.by, {
      guard: ageGuard(deps),
      perService: deps.settings.buildImagesPerService,
      usedImageIds: new Set(stay.map((c) => c.imageId)),
      referencedRefs: new Set([...seen.refs.serviceImages, ...stay.map((c) => c.image)]),
    });
  },
  // Never forced: the engine refuses to untag the last tag of an image that a container uses.
  remove: (t, { docker }) => ignoreNotFound(() => docker.removeImage(t.ref)),
});
