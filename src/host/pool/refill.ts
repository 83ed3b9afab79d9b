/**
 * The warm pool's refill steps: take claimed containers off `ah-pool`, prune ghost rows, plan, and create pool
 * entries idempotently. The poolRefill workflow runs them as activities (one per pool entry, each retried
 * safely); the claim itself is in claim.ts.
 */
import { containersHeldByEnvironments } from '../../db/environments';
import {
  deleteFinishedClaims, deletePoolRow, findTemplate, insertReadyEntry, listTemplates, poolEntryDone, poolRows, readyCounts,
} from '../../db/pool';
import { DockerError } from '../../docker/client';
import { ignoreNotFound, isNotFound } from '../../docker/errors';
import { POOL_NETWORK, poolContainerName, poolVolumeName } from '../../names';
import { hasRoom, planRefill, POOL_NETWORK_OPTIONS, resolvePooledTemplates } from '../../policy/pool';
import { unixSeconds } from '../../time';
import type { HostDeps } from '../deps';
import { environmentSpec, poolLabels } from '../environment-spec';
import { resolveNetwork } from '../networks';

export interface PruneReport {
  checked: number;
  /** Ready rows whose container the engine answered 404 for: row deleted, volume removed. */
  pruned: string[];
  /** Ready rows whose inspect failed otherwise: kept (W-P4). */
  kept: { id: string; error: string }[];
  /** Claimed rows an environment already owns (an interrupted claim's leftover row): row deleted. */
  finishedClaims: number;
  /** Claimed rows no environment references: left alone (they protect their container) and reported. */
  strandedClaims: string[];
}

export interface PoolDetachReport {
  /** Claimed containers taken off `ah-pool` (claims leave that to the refill when the network isolates). */
  detached: string[];
  failed: { containerId: string; error: string }[];
  /** Set when `ah-pool` could not be read (the engine did not answer): nothing was detached this time. */
  error?: string;
}

export interface RefillPlan {
  steps: { templateId: string; count: number }[];
  ready: Record<string, number>;
  pooled: string[];
  unknownTemplates: string[];
}

export interface PoolEntryRequest {
  entryId: string;
  templateId: string;
}

export interface PoolEntryResult {
  entryId: string;
  templateId: string;
  outcome: 'created' | 'exists' | 'full';
  containerId?: string;
}

/** Why a pool entry cannot be made by retrying: the workflow reports it and does not retry (see activities/pool.ts). */
export class PoolEntryRefused extends Error {
  override name = 'PoolEntryRefused';
  constructor(readonly reason: 'TemplateNotFound' | 'ImageMissing' | 'NameTaken', message: string) {
    super(message);
  }
}

type PoolDeps = Pick<HostDeps, 'db' | 'docker' | 'settings' | 'clock'>;

/** Ghost rows go only on a 404 from the engine; any other error keeps the row (W-P4). */
export async function prunePoolGhosts({ db, docker }: PoolDeps): Promise<PruneReport> {
  const report: PruneReport = { checked: 0, pruned: [], kept: [], finishedClaims: 0, strandedClaims: [] };
  for (const row of poolRows(db, 'ready')) {
    report.checked++;
    try {
      await docker.inspectContainer(row.containerId);
      continue;
    } catch (err) {
      if (!(err instanceof DockerError)) throw err;
      if (!err.isNotFound) {
        report.kept.push({ id: row.id, error: err.message });
        continue;
      }
    }
    if (!deletePoolRow(db, row.id, 'ready')) continue;
    report.pruned.push(row.id);
    await ignoreNotFound(docker.removeVolume(row.volumeName)).catch((e: Error) =>
      report.kept.push({ id: row.id, error: `row pruned, volume ${row.volumeName} kept: ${e.message}` }),
    );
  }
  report.finishedClaims = deleteFinishedClaims(db);
  report.strandedClaims = poolRows(db, 'claimed').map((r) => r.id);
  return report;
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

/** What this refill should create: the pooled templates (from the setting) up to size and max total. */
export function planPoolRefill({ db, settings }: Pick<HostDeps, 'db' | 'settings'>): RefillPlan {
  const { pooled, unknown } = resolvePooledTemplates(settings.pooledTemplates, listTemplates(db));
  const ready = readyCounts(db);
  const steps = planRefill({ pooled: pooled.map((t) => t.id), ready, size: settings.poolSize, maxTotal: settings.poolMaxTotal });
  return { steps, ready, pooled: pooled.map((t) => t.id), unknownTemplates: unknown };
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
  // keeper does not pull: an image the engine lacks fails this entry before anything is made for it.
  const missing = `image ${template.baseImage} of template ${template.id} is not on this engine`;
  if (!(await docker.imageExists(template.baseImage))) throw new PoolEntryRefused('ImageMissing', missing);
  let containerId: string | undefined;
  try {
    const poolNet = await resolveNetwork(db, docker, POOL_NETWORK, POOL_NETWORK_OPTIONS);
    await docker.createVolume(volume, { 'ah.managed': 'true', 'ah.type': 'warm-pool', 'ah.pool-entry': req.entryId });
    const spec = environmentSpec(template, { name: poolContainerName(req.entryId), network: poolNet, volume, labels: poolLabels(template.id, req.entryId) });
    containerId = await createOrAdopt(docker, spec, req.entryId);
    await docker.startContainer(containerId);
    insertReadyEntry(db, { id: req.entryId, templateId: template.id, containerId, volumeName: volume, createdAt: unixSeconds(clock) });
    return { ...req, outcome: 'created', containerId };
  } catch (err) {
    // Leave nothing behind for a failed attempt; a retry starts again from the same names. A container whose
    // name another entry took is not ours: it stays.
    const ours = !(err instanceof PoolEntryRefused && err.reason === 'NameTaken');
    if (ours) await ignoreNotFound(docker.removeContainer(containerId ?? poolContainerName(req.entryId), { force: true })).catch(() => undefined);
    await ignoreNotFound(docker.removeVolume(volume)).catch(() => undefined);
    if (err instanceof DockerError && err.isNotFound && err.operation === 'container.create') {
      throw new PoolEntryRefused('ImageMissing', `${missing}: ${err.message}`);
    }
    throw err;
  }
}

/** A retry finds its own container by name (409): it adopts it, unless another entry owns that name. */
async function createOrAdopt(docker: HostDeps['docker'], spec: ReturnType<typeof environmentSpec>, entryId: string): Promise<string> {
  try {
    return await docker.createContainer(spec);
  } catch (err) {
    if (!(err instanceof DockerError && err.status === 409)) throw err;
    const existing = await docker.inspectContainer(spec.name);
    if (existing.labels['ah.pool-entry'] !== entryId) {
      throw new PoolEntryRefused('NameTaken', `container name ${spec.name} is taken by a container that is not pool entry ${entryId}`);
    }
    return existing.id;
  }
}
