/**
 * The garbage collector's classes, one function each, so that one failing class does not stop the others. Each
 * observes (DB references and engine lists), plans through src/policy/gc.ts and carries out the plan (see
 * sweep.ts). An engine or DB error while observing skips the class or the resource; it never makes anything an
 * orphan.
 */
import path from 'node:path';
import { deleteCrashRecord, listCrashRecordAges } from '../../db/crash-records';
import { deleteSnapshotRow, listSnapshotRows, loadBuildAttribution, loadGcReferences } from '../../db/gc';
import { oneLine } from '../../db/open';
import type { ContainerUsage } from '../../docker/engine';
import { DockerError, ignoreNotFound } from '../../docker/errors';
import { AH_NAME_PREFIX, BUILD_IMAGE_REPO_PREFIX, TENANT_NETWORK_PREFIX, TRAEFIK_CONTAINER } from '../../names';
import {
  needsStop,
  planBuildDirs,
  planBuildImages,
  planContainers,
  planCrashRecords,
  planDanglingImages,
  planNetworks,
  planSnapshots,
  planVolumes,
  type AgeGuard,
  type NetworkObs,
} from '../../policy/gc';
import { unixSeconds } from '../../time';
import type { HostDeps } from '../deps';
import { observeBuildDirs, removeBuildDir } from './build-dirs';
import { carryOut, isClassResult, observed } from './sweep';
import type { GcClassInput, GcClassResult, GcFailure } from '../../contracts/gc';

type GcDeps = Pick<HostDeps, 'db' | 'docker' | 'settings' | 'log' | 'clock'>;

/** Grace a running orphan gets to stop before it is removed. */
const STOP_GRACE_SECONDS = 10;

const ageGuard = ({ settings, clock }: GcDeps): AgeGuard => ({
  now: unixSeconds(clock),
  minAgeSeconds: Math.floor(settings.gcMinAgeMs / 1000),
});
/** Containers that stay: what the containers class of this sweep did not (or, dry, would not) remove. */
const staying = (all: ContainerUsage[], input: GcClassInput) => {
  const gone = new Set(input.goneContainers ?? []);
  return all.filter((c) => !gone.has(c.id));
};

/** ah containers of every kind that no row of any table references: stopped, then removed. */
export async function removeOrphanContainers(deps: GcDeps, input: GcClassInput): Promise<GcClassResult> {
  const { db, docker, log } = deps;
  const seen = await observed(log, 'containers', input.dryRun, async () => ({
    refs: loadGcReferences(db),
    containers: await docker.listContainerUsage(),
  }));
  if (isClassResult(seen)) return seen;
  const plan = planContainers(seen.containers, seen.refs, ageGuard(deps));
  return carryOut(log, 'containers', input.dryRun, plan, [], (c) =>
    ignoreNotFound(async () => {
      if (needsStop(c.state)) await docker.stopContainer(c.id, STOP_GRACE_SECONDS);
      await docker.removeContainer(c.id, { force: false });
    }),
  );
}

/** ah-db-, ah-env-, ah-kanban- and ah-pool- volumes no row references and no staying container mounts. */
export async function removeOrphanVolumes(deps: GcDeps, input: GcClassInput): Promise<GcClassResult> {
  const { db, docker, log } = deps;
  const seen = await observed(log, 'volumes', input.dryRun, async () => ({
    refs: loadGcReferences(db),
    volumes: await docker.listVolumes(AH_NAME_PREFIX),
    containers: await docker.listContainerUsage(),
  }));
  if (isClassResult(seen)) return seen;
  const inUse = new Set(staying(seen.containers, input).flatMap((c) => c.volumes));
  const plan = planVolumes(seen.volumes, seen.refs, inUse, ageGuard(deps));
  // Never forced: the engine refuses a volume that a container uses, whatever the plan said.
  return carryOut(log, 'volumes', input.dryRun, plan, [], (v) => ignoreNotFound(() => docker.removeVolume(v.name)));
}

/** ah-tenant-* networks with nothing attached (read from an inspect, W-G1) and no container configured on them. */
export async function removeEmptyTenantNetworks(deps: GcDeps, input: GcClassInput): Promise<GcClassResult> {
  const { docker, log } = deps;
  const seen = await observed(log, 'networks', input.dryRun, async () => ({
    networks: await docker.listNetworks(TENANT_NETWORK_PREFIX),
    containers: await docker.listContainerUsage(),
  }));
  if (isClassResult(seen)) return seen;
  const { observations, skipped } = await inspectNetworks(
    deps,
    seen.networks,
    staying(seen.containers, input),
    new Set(input.goneContainers ?? []),
  );
  const plan = planNetworks(observations, ageGuard(deps));
  return carryOut(log, 'networks', input.dryRun, plan, skipped, (n) =>
    ignoreNotFound(async () => {
      if (n.attached.includes(TRAEFIK_CONTAINER)) await ignoreNotFound(() => docker.disconnectNetwork(n.id, TRAEFIK_CONTAINER));
      await docker.removeNetwork(n.id);
    }),
  );
}

/** Only an inspect reports who is attached; a network that cannot be inspected is skipped, never judged empty. */
async function inspectNetworks(
  { docker, log }: GcDeps,
  networks: { id: string; name: string }[],
  stay: ContainerUsage[],
  gone: Set<string>,
): Promise<{ observations: NetworkObs[]; skipped: GcFailure[] }> {
  const observations: NetworkObs[] = [];
  const skipped: GcFailure[] = [];
  for (const n of networks) {
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

/** Dangling images that carry an ah. label and that no staying container uses. */
export async function removeDanglingImages(deps: GcDeps, input: GcClassInput): Promise<GcClassResult> {
  const { docker, log } = deps;
  const seen = await observed(log, 'images', input.dryRun, async () => ({
    images: await docker.listDanglingImages(),
    containers: await docker.listContainerUsage(),
  }));
  if (isClassResult(seen)) return seen;
  const usedBy = new Set(staying(seen.containers, input).map((c) => c.imageId));
  const plan = planDanglingImages(seen.images, usedBy, ageGuard(deps));
  return carryOut(log, 'images', input.dryRun, plan, [], (i) => ignoreNotFound(() => docker.removeImage(i.id)));
}

/**
 * ah's build images (127.0.0.1:5000/ah/<tenant>-<service>): untagged ones past the age guard, and tags beyond the
 * newest --build-images-per-service of each service. Never one a staying container uses or a service row names.
 */
export async function removeBuildImages(deps: GcDeps, input: GcClassInput): Promise<GcClassResult> {
  const { db, docker, settings, log } = deps;
  const seen = await observed(log, 'buildImages', input.dryRun, async () => ({
    by: loadBuildAttribution(db),
    refs: loadGcReferences(db),
    images: await docker.listImagesUnder(BUILD_IMAGE_REPO_PREFIX),
    containers: await docker.listContainerUsage(),
  }));
  if (isClassResult(seen)) return seen;
  const stay = staying(seen.containers, input);
  const rule = {
    guard: ageGuard(deps),
    perService: settings.buildImagesPerService,
    usedImageIds: new Set(stay.map((c) => c.imageId)),
    referencedRefs: new Set([...seen.refs.serviceImages, ...stay.map((c) => c.image)]),
  };
  // Never forced: the engine refuses to untag the last tag of an image that a container uses.
  return carryOut(log, 'buildImages', input.dryRun, planBuildImages(seen.images, seen.by, rule), [], (t) =>
    ignoreNotFound(() => docker.removeImage(t.ref)),
  );
}

/** Build directories older than --build-dir-max-age, inside the resolved base; symlinks are never followed. */
export async function removeOldBuildDirs(deps: GcDeps, input: GcClassInput): Promise<GcClassResult> {
  const { settings, log, clock } = deps;
  const seen = await observed(log, 'buildDirs', input.dryRun, () => observeBuildDirs(settings.buildDir));
  if (isClassResult(seen)) return seen;
  const plan = planBuildDirs(seen.entries, {
    nowMs: clock.nowMs(),
    maxAgeMs: settings.buildDirMaxAgeMs,
    realBase: seen.realBase,
    sep: path.sep,
  });
  return carryOut(log, 'buildDirs', input.dryRun, plan, seen.skipped, async (e) => removeBuildDir(seen.realBase, e));
}

/** Snapshots over the per-service count (first) or the age limit, unless a service or container runs the image. */
export async function removeExpiredSnapshots(deps: GcDeps, input: GcClassInput): Promise<GcClassResult> {
  const { db, docker, settings, log, clock } = deps;
  const seen = await observed(log, 'snapshots', input.dryRun, async () => ({
    rows: listSnapshotRows(db),
    refs: loadGcReferences(db),
    containers: await docker.listContainerUsage(),
  }));
  if (isClassResult(seen)) return seen;
  const runningRefs = new Set([...seen.refs.serviceImages, ...staying(seen.containers, input).map((c) => c.image)]);
  const rule = {
    now: unixSeconds(clock),
    maxPerService: settings.snapshotMaxPerService,
    maxAgeSeconds: Math.floor(settings.snapshotMaxAgeMs / 1000),
  };
  return carryOut(log, 'snapshots', input.dryRun, planSnapshots(seen.rows, runningRefs, rule), [], async (s) => {
    // The row goes only once its tag is gone, so a refused untag is retried next sweep (W-G8).
    if (s.imageRef) await ignoreNotFound(() => docker.removeImage(s.imageRef));
    deleteSnapshotRow(db, s.id, s.tenantId);
  });
}

/**
 * keeper's crash records over --crash-record-max-per-service (newest kept, count pass first) or older than
 * --crash-record-max-age. DB only: the engine being down does not stop this class.
 */
export async function removeOldCrashRecords(deps: GcDeps, input: GcClassInput): Promise<GcClassResult> {
  const { db, settings, log, clock } = deps;
  const seen = await observed(log, 'crashRecords', input.dryRun, () => listCrashRecordAges(db));
  if (isClassResult(seen)) return seen;
  const rule = {
    now: unixSeconds(clock),
    maxPerService: settings.crashRecordMaxPerService,
    maxAgeSeconds: Math.floor(settings.crashRecordMaxAgeMs / 1000),
  };
  return carryOut(log, 'crashRecords', input.dryRun, planCrashRecords(seen, rule), [], async (r) => deleteCrashRecord(db, r.id));
}
