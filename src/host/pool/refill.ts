/**
 * The warm pool's refill steps: take claimed containers off `ah-pool`, prune ghost rows, plan, and create pool
 * entries idempotently. The poolRefill workflow runs them as activities (one per pool entry, each retried
 * safely); the claim itself is in claim.ts.
 */
import { containersHeldByEnvironments } from '../../db/environments';
import {
  deleteFinishedClaims,
  deletePoolRow,
  findTemplate,
  forgetUnpooledRuntimes,
  insertReadyEntry,
  listTemplates,
  poolEntryDone,
  poolRows,
  readyCounts,
  readyRuntimes,
  recordContainerRuntime,
  type PoolRow,
} from '../../db/pool';
import type { ContainerDetails } from '../../docker/engine';
import { DockerError, ignoreNotFound, isNotFound } from '../../docker/errors';
import { LABEL, MANAGED, POOL_NETWORK, poolContainerName, poolVolumeName, RESOURCE_TYPE } from '../../names';
import { hasRoom, isDeadPoolContainer, planRefill, POOL_NETWORK_OPTIONS, resolvePooledTemplates } from '../../policy/pool';
import { unixSeconds } from '../../time';
import { pullView } from '../../policy/image-pull';
import type { HostDeps } from '../deps';
import { environmentSpec, poolLabels } from '../environment-spec';
import { resolveNetwork } from '../networks';
import { missingRuntimeLine } from '../tenant-runtime';
import type { ImagePulls } from './pull';
import type { PoolDetachReport, PoolEntryRequest, PoolEntryResult, PruneReport, RefillPlan } from '../../contracts/pool';

type ImageCheck = Required<Pick<RefillPlan, 'missingImages' | 'imagesUnchecked'>>;

/** Why a pool entry cannot be made by retrying: the workflow reports it and does not retry (see activities/pool.ts). */
export class PoolEntryRefused extends Error {
  override name = 'PoolEntryRefused';
  constructor(
    readonly reason: 'TemplateNotFound' | 'ImageMissing' | 'NameTaken' | 'RuntimeMissing',
    message: string,
  ) {
    super(message);
  }
}

type PoolDeps = Pick<HostDeps, 'db' | 'docker' | 'settings' | 'clock'>;

/**
 * Looks at every ready row's container. A 404 makes the row a ghost: deleted, its volume removed; any other
 * error keeps the row (W-P4). A container that is down (policy/pool.ts: isDeadPoolContainer) or runs under another
 * runtime than --tenant-runtime is replaced: its row is deleted (a compare-and-set on `ready`, so a claim that took it
 * first keeps it), then the container and volume are removed, and the plan refills. A container under the configured
 * runtime has its runtime recorded, which is what lets a claim take it (keeper_container_runtimes).
 */
export async function prunePoolGhosts(deps: PoolDeps): Promise<PruneReport> {
  const { db } = deps;
  const report: PruneReport = { checked: 0, pruned: [], kept: [], replaced: [], dead: [], finishedClaims: 0, strandedClaims: [] };
  const recorded = readyRuntimes(db);
  for (const row of poolRows(db, 'ready')) {
    report.checked++;
    const details = await inspectReady(deps, row, report);
    if (details === undefined) continue;
    const dead = isDeadPoolContainer(details.status, details.finishedAtMs, deps.clock.nowMs());
    if (!dead && details.runtime === deps.settings.tenantRuntime) {
      if (recorded.get(row.containerId) !== details.runtime)
        recordContainerRuntime(db, row.containerId, details.runtime, unixSeconds(deps.clock));
      continue;
    }
    if (!deletePoolRow(db, row.id, 'ready')) continue;
    if (dead) report.dead!.push(row.id);
    else report.replaced!.push({ id: row.id, runtime: details.runtime });
    await removePoolResources(deps, row, report, 'replaced');
  }
  report.finishedClaims = deleteFinishedClaims(db);
  report.strandedClaims = poolRows(db, 'claimed').map((r) => r.id);
  forgetUnpooledRuntimes(db);
  return report;
}

/** A ready row's container; undefined when the row was pruned as a ghost or kept after an error. */
async function inspectReady(deps: PoolDeps, row: PoolRow, report: PruneReport): Promise<ContainerDetails | undefined> {
  try {
    return await deps.docker.inspectContainer(row.containerId);
  } catch (err) {
    if (!(err instanceof DockerError)) throw err;
    if (!err.isNotFound) {
      report.kept.push({ id: row.id, error: err.message });
      return undefined;
    }
  }
  if (deletePoolRow(deps.db, row.id, 'ready')) {
    report.pruned.push(row.id);
    await removePoolResources(deps, row, report, 'ghost');
  }
  return undefined;
}

/** Removes what a deleted ready row named: a ghost's volume, or a replaced row's container and volume. */
async function removePoolResources(deps: PoolDeps, row: PoolRow, report: PruneReport, why: 'ghost' | 'replaced'): Promise<void> {
  const { docker } = deps;
  try {
    if (why === 'replaced') await ignoreNotFound(docker.removeContainer(row.containerId, { force: true }));
    await ignoreNotFound(docker.removeVolume(row.volumeName));
  } catch (err) {
    // The row is gone either way: what is left is unreferenced, and GC collects it once it is old enough.
    const left = why === 'ghost' ? `volume ${row.volumeName}` : `container ${row.containerId.slice(0, 12)} or volume ${row.volumeName}`;
    report.kept.push({ id: row.id, error: `row ${why === 'ghost' ? 'pruned' : 'replaced'}, ${left} kept: ${(err as Error).message}` });
  }
}

/**
 * Takes claimed containers off `ah-pool`. Level-triggered: every member that an environment row holds goes,
 * whichever claim left it there; ready members (held by no environment) stay. An engine that does not answer
 * is reported, not thrown: the rest of the refill (which is DB-only until it creates) still runs.
 */
export async function detachClaimedFromPool({ db, docker }: PoolDeps): Promise<PoolDetachReport> {
  const report: PoolDetachReport = { detached: [], failed: [] };
  let pool: { id: string; members: string[] };
  try {
    const net = await docker.inspectNetwork(POOL_NETWORK);
    pool = { id: net.id, members: net.containers.map((c) => c.id) };
  } catch (err) {
    if (isNotFound(err)) return report;
    if (!(err instanceof DockerError)) throw err;
    return { ...report, error: err.message };
  }
  for (const containerId of containersHeldByEnvironments(db, pool.members)) {
    try {
      await ignoreNotFound(docker.disconnectNetwork(pool.id, containerId, true));
      report.detached.push(containerId);
    } catch (err) {
      report.failed.push({ containerId, error: (err as Error).message });
    }
  }
  return report;
}

/**
 * What this refill should create: the pooled templates (from the setting) whose image the engine has, up to
 * size and max total. A missing image is a condition of the refill, not a failure of each of its entries; with
 * `pulls`, its pull is started in the background (when due) and the plan goes on without it.
 */
export async function planPoolRefill(
  { db, docker, settings }: Pick<HostDeps, 'db' | 'docker' | 'settings'>,
  pulls?: ImagePulls,
): Promise<RefillPlan> {
  const { pooled, unknown } = resolvePooledTemplates(settings.pooledTemplates, listTemplates(db));
  const { missingImages, imagesUnchecked } = await checkImages(docker, pooled);
  if (pulls) {
    const recorded = pulls.ensure(missingImages.map((m) => m.image));
    for (const m of missingImages) {
      const r = recorded.get(m.image);
      if (r) m.pull = pullView(r);
    }
  }
  const creatable = pooled.filter((t) => !missingImages.some((m) => m.templateId === t.id)).map((t) => t.id);
  const ready = readyCounts(db);
  const steps = planRefill({ pooled: creatable, ready, size: settings.poolSize, maxTotal: settings.poolMaxTotal });
  return { steps, ready, pooled: pooled.map((t) => t.id), unknownTemplates: unknown, missingImages, imagesUnchecked };
}

/**
 * The templates whose image the engine answers 404 for, and those it did not answer about: these stay in the
 * plan, and their creates fail and are retried as any engine error is.
 */
async function checkImages(docker: HostDeps['docker'], templates: { id: string; name: string; baseImage: string }[]): Promise<ImageCheck> {
  const out: ImageCheck = { missingImages: [], imagesUnchecked: [] };
  for (const t of templates) {
    try {
      if (!(await docker.imageExists(t.baseImage))) out.missingImages.push({ templateId: t.id, name: t.name, image: t.baseImage });
    } catch (err) {
      if (!(err instanceof DockerError)) throw err;
      out.imagesUnchecked.push(t.id);
    }
  }
  return out;
}

/**
 * Creates pool entry `entryId` (chosen by the workflow, so every retry names the same entry): volume,
 * container, start, then the row. The container name is the idempotency key (a 409 reuses it) and the row
 * goes in with INSERT OR IGNORE; an entry whose row exists, or whose volume an environment holds, is done.
 */
export async function createPoolEntry(deps: PoolDeps, req: PoolEntryRequest): Promise<PoolEntryResult> {
  const { db, docker, settings, clock } = deps;
  const volume = poolVolumeName(req.entryId);
  if (poolEntryDone(db, req.entryId, volume)) return { ...req, outcome: 'exists' };
  if (!hasRoom(req.templateId, readyCounts(db), settings.poolSize, settings.poolMaxTotal)) return { ...req, outcome: 'full' };
  const template = findTemplate(db, req.templateId);
  if (!template) throw new PoolEntryRefused('TemplateNotFound', `template ${req.templateId} not found`);
  // An image the engine lacks (removed since the plan) fails this entry before anything is made for it; the next
  // plan starts its pull.
  const missing = `image ${template.baseImage} of template ${template.id} is not on this engine`;
  if (!(await docker.imageExists(template.baseImage))) throw new PoolEntryRefused('ImageMissing', missing);
  let containerId: string | undefined;
  try {
    const poolNet = await resolveNetwork(db, docker, POOL_NETWORK, POOL_NETWORK_OPTIONS);
    await docker.createVolume(volume, { [LABEL.managed]: MANAGED, [LABEL.type]: RESOURCE_TYPE.warmPool, [LABEL.poolEntry]: req.entryId });
    const labels = poolLabels(template.id, req.entryId);
    const spec = environmentSpec(template, {
      name: poolContainerName(req.entryId),
      network: poolNet,
      volume,
      labels,
      runtime: settings.tenantRuntime,
    });
    const made = await createOrAdopt(docker, spec, req.entryId);
    containerId = made.id;
    await docker.startContainer(containerId);
    insertReadyEntry(db, {
      id: req.entryId,
      templateId: template.id,
      containerId,
      volumeName: volume,
      createdAt: unixSeconds(clock),
      runtime: made.runtime,
    });
    return { ...req, outcome: 'created', containerId };
  } catch (err) {
    // Leave nothing behind for a failed attempt; a retry starts again from the same names. A container whose
    // name another entry took is not ours: it stays.
    const ours = !(err instanceof PoolEntryRefused && err.reason === 'NameTaken');
    if (ours)
      await ignoreNotFound(docker.removeContainer(containerId ?? poolContainerName(req.entryId), { force: true })).catch(() => undefined);
    await ignoreNotFound(docker.removeVolume(volume)).catch(() => undefined);
    if (err instanceof DockerError && err.isNotFound && err.operation === 'container.create') {
      throw new PoolEntryRefused('ImageMissing', `${missing}: ${err.message}`);
    }
    if (err instanceof DockerError && err.status === 400 && err.operation === 'container.create')
      await refuseMissingRuntime(docker, settings);
    throw err;
  }
}

/**
 * After a create the engine refused (400): when the engine does not list the tenant runtime (a worker started
 * while the engine was down, or runsc unregistered since), the entry fails, not to be retried, with the line the
 * start check prints, which the refill's result and `keeper pool status` then show.
 */
async function refuseMissingRuntime(docker: HostDeps['docker'], settings: PoolDeps['settings']): Promise<void> {
  const engine = await docker.runtimes().catch(() => undefined);
  if (engine && !engine.names.includes(settings.tenantRuntime)) {
    throw new PoolEntryRefused('RuntimeMissing', missingRuntimeLine(settings.tenantRuntime, engine));
  }
}

/**
 * A retry finds its own container by name (409): it adopts it, unless another entry owns that name. The runtime
 * returned is the container's own: an adopted one made under another runtime (the setting changed between two
 * attempts) is recorded as it is, so no claim takes it and the next refill replaces it.
 */
async function createOrAdopt(
  docker: HostDeps['docker'],
  spec: ReturnType<typeof environmentSpec>,
  entryId: string,
): Promise<{ id: string; runtime: string }> {
  try {
    return { id: await docker.createContainer(spec), runtime: spec.confined!.runtime };
  } catch (err) {
    if (!(err instanceof DockerError && err.status === 409)) throw err;
    const existing = await docker.inspectContainer(spec.name);
    if (existing.labels[LABEL.poolEntry] !== entryId) {
      throw new PoolEntryRefused('NameTaken', `container name ${spec.name} is taken by a container that is not pool entry ${entryId}`);
    }
    return { id: existing.id, runtime: existing.runtime };
  }
}
