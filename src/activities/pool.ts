/**
 * The warm pool's side effects: ghost pruning, idempotent creation of pool containers, taking claimed ones off
 * `ah-pool`, and the pool's status and drain. Refill runs as the `poolRefill` workflow (one activity per pool
 * entry, each retried safely). The claim itself is in claim.ts.
 */
import { activityInfo, ApplicationFailure } from '@temporalio/activity';
import { containersHeldByEnvironments } from '../db/environments';
import { recordLoopResult } from '../db/loop-results';
import {
  deleteFinishedClaims, deletePoolRow, environmentReferences, findTemplate, insertReadyEntry, listTemplates, poolEntryDone,
  poolRows, readyCounts, type TemplateRow,
} from '../db/pool';
import { DockerError, type ContainerSpec } from '../docker/client';
import { ignoreNotFound, isNotFound } from '../docker/errors';
import { hasRoom, planRefill, POOL_NETWORK_OPTIONS, resolvePooledTemplates } from '../policy/pool';
import type { DiskVerdict } from '../policy/disk';
import type { ActivityDeps } from './deps';
import { resolveNetwork } from './networks';

export const POOL_NETWORK = 'ah-pool';
export const poolVolumeName = (entryId: string) => `ah-pool-${entryId}`;
/** ah's name for a pool container (TenantID "pool", EnvID = entry id); a claim renames it. */
export const poolContainerName = (entryId: string) => `ah-env-pool-${entryId}`;
export const tenantNetworkName = (tenantId: string) => `ah-tenant-${tenantId}`;
export const environmentContainerName = (tenantId: string, envId: string) => `ah-env-${tenantId}-${envId}`;
export const environmentVolumeName = (envId: string) => `ah-env-${envId}`;

/** busybox and coreutils both accept `sleep infinity` (checked against the test image). */
export const IDLE_CMD = ['sleep', 'infinity'];

export const nowSeconds = () => Math.floor(Date.now() / 1000);

export function environmentSpec(
  template: TemplateRow,
  x: { name: string; network: string; volume: string; labels: Record<string, string> },
): ContainerSpec {
  return {
    name: x.name,
    image: template.base_image,
    cmd: IDLE_CMD,
    labels: x.labels,
    restartPolicy: 'unless-stopped',
    network: x.network,
    volumes: [{ name: x.volume, target: '/workspace' }],
    memoryBytes: template.memory_mb * 1024 * 1024,
    nanoCpus: template.cpu_millicores * 1e6,
    init: true,
    workingDir: '/workspace',
    confined: { readonlyRootfs: false },
  };
}

/** Labels of a pool container. ah.type stays `warm-pool`: nothing later in the chain overwrites it (W-G2). */
export function poolLabels(templateId: string, entryId: string): Record<string, string> {
  return { 'ah.managed': 'true', 'ah.type': 'warm-pool', 'ah.template': templateId, 'ah.pool-entry': entryId };
}


// ---------------------------------------------------------------------------------------------------------
// Refill

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

export interface PoolRefillResult {
  /** Absent from results recorded before claims deferred the detach. */
  detach?: PoolDetachReport;
  prune: PruneReport;
  disk: { level: DiskVerdict['level']; message: string };
  blocked: boolean;
  plan: RefillPlan | null;
  created: PoolEntryResult[];
  failed: { entryId: string; templateId: string; error: string }[];
  ready: Record<string, number>;
  error?: string;
}

export function createPoolActivities({ db, docker, settings, metrics }: ActivityDeps) {
  return {
    /** Ghost rows go only on a 404 from the engine; any other error keeps the row (W-P4). */
    async prunePoolGhosts(): Promise<PruneReport> {
      const report: PruneReport = { checked: 0, pruned: [], kept: [], finishedClaims: 0, strandedClaims: [] };
      for (const row of poolRows(db, 'ready')) {
        report.checked++;
        try {
          await docker.inspectContainer(row.container_id);
        } catch (err) {
          if (!(err instanceof DockerError)) throw err;
          if (!err.isNotFound) {
            report.kept.push({ id: row.id, error: err.message });
            continue;
          }
          if (deletePoolRow(db, row.id, 'ready')) {
            report.pruned.push(row.id);
            await ignoreNotFound(docker.removeVolume(row.volume_name)).catch((e: Error) =>
              report.kept.push({ id: row.id, error: `row pruned, volume ${row.volume_name} kept: ${e.message}` }),
            );
          }
        }
      }
      report.finishedClaims = deleteFinishedClaims(db);
      report.strandedClaims = poolRows(db, 'claimed').map((r) => r.id);
      return report;
    },

    /**
     * Takes claimed containers off `ah-pool`. Level-triggered: every member that an environment row holds goes,
     * whichever claim left it there; ready members (held by no environment) stay.
     */
    async detachClaimedFromPool(): Promise<PoolDetachReport> {
      const report: PoolDetachReport = { detached: [], failed: [] };
      let members: string[];
      let networkId: string;
      try {
        const net = await docker.inspectNetwork(POOL_NETWORK);
        [networkId, members] = [net.id, net.containers.map((c) => c.id)];
      } catch (err) {
        if (isNotFound(err)) return report;
        throw err;
      }
      for (const containerId of containersHeldByEnvironments(db, members)) {
        try {
          await ignoreNotFound(docker.disconnectNetwork(networkId, containerId, true));
          report.detached.push(containerId);
        } catch (err) {
          report.failed.push({ containerId, error: (err as Error).message });
        }
      }
      return report;
    },

    /** What this refill should create: the pooled templates (from the setting) up to size and max total. */
    async planPoolRefill(): Promise<RefillPlan> {
      const { pooled, unknown } = resolvePooledTemplates(settings.pooledTemplates, listTemplates(db));
      const ready = readyCounts(db);
      const steps = planRefill({ pooled: pooled.map((t) => t.id), ready, size: settings.poolSize, maxTotal: settings.poolMaxTotal });
      return { steps, ready, pooled: pooled.map((t) => t.id), unknownTemplates: unknown };
    },

    /**
     * Creates pool entry `entryId` (chosen by the workflow, so every retry names the same entry): volume,
     * container, start, then the row. The container name is the idempotency key (a 409 reuses it) and the row
     * goes in with INSERT OR IGNORE; an entry whose row exists, or whose volume an environment holds, is done.
     */
    async createPoolEntry(req: PoolEntryRequest): Promise<PoolEntryResult> {
      const volume = poolVolumeName(req.entryId);
      const name = poolContainerName(req.entryId);
      if (poolEntryDone(db, req.entryId, volume)) return { ...req, outcome: 'exists' };
      if (!hasRoom(req.templateId, readyCounts(db), settings.poolSize, settings.poolMaxTotal)) return { ...req, outcome: 'full' };
      const template = findTemplate(db, req.templateId);
      if (!template) throw ApplicationFailure.nonRetryable(`template ${req.templateId} not found`, 'TemplateNotFound');
      // keeper does not pull: an image the engine lacks fails this entry before anything is made for it.
      if (!(await docker.imageExists(template.base_image))) {
        throw ApplicationFailure.nonRetryable(`image ${template.base_image} of template ${template.id} is not on this engine`, 'ImageMissing');
      }

      let containerId: string | undefined;
      try {
        const poolNet = await resolveNetwork(db, docker, POOL_NETWORK, POOL_NETWORK_OPTIONS);
        await docker.createVolume(volume, { 'ah.managed': 'true', 'ah.type': 'warm-pool', 'ah.pool-entry': req.entryId });
        const spec = environmentSpec(template, { name, network: poolNet, volume, labels: poolLabels(template.id, req.entryId) });
        try {
          containerId = await docker.createContainer(spec);
        } catch (err) {
          if (!(err instanceof DockerError && err.status === 409)) throw err;
          const existing = await docker.inspectContainer(name);
          if (existing.labels['ah.pool-entry'] !== req.entryId) {
            throw ApplicationFailure.nonRetryable(`container name ${name} is taken by a container that is not pool entry ${req.entryId}`, 'NameTaken');
          }
          containerId = existing.id;
        }
        await docker.startContainer(containerId);
        insertReadyEntry(db, { id: req.entryId, templateId: template.id, containerId, volumeName: volume, createdAt: nowSeconds() });
        return { ...req, outcome: 'created', containerId };
      } catch (err) {
        // Leave nothing behind for a failed attempt; a retry starts again from the same names.
        await ignoreNotFound(docker.removeContainer(containerId ?? name, { force: true })).catch(() => undefined);
        await ignoreNotFound(docker.removeVolume(volume)).catch(() => undefined);
        if (err instanceof DockerError && err.isNotFound && err.operation === 'container.create') {
          throw ApplicationFailure.nonRetryable(`image ${template.base_image} of template ${template.id} is not on this engine: ${err.message}`, 'ImageMissing');
        }
        throw err;
      }
    },

    /** Stores the refill's result as the pool loop's last result (for `keeper pool status`). */
    async recordPoolRefill(result: PoolRefillResult): Promise<void> {
      const info = activityInfo();
      recordLoopResult(db, {
        loop: 'pool',
        hostId: settings.hostId,
        workflowId: info.workflowExecution?.workflowId ?? '',
        finishedAt: nowSeconds(),
        result,
      });
      if (metrics) for (const t of poolStats(db, settings).templates) metrics.poolReady.set(t.ready, { template: t.id });
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Status and drain (CLI, `keeper status`)

export interface PoolStats {
  templates: { id: string; name: string; pooled: boolean; ready: number }[];
  total: number;
  claimedRows: number;
  size: number;
  maxTotal: number;
  unknownTemplates: string[];
}

/** Ready containers per template (0 for templates that have none, pooled or not) and the total. */
export function poolStats(db: ActivityDeps['db'], settings: Pick<ActivityDeps['settings'], 'pooledTemplates' | 'poolSize' | 'poolMaxTotal'>): PoolStats {
  const templates = listTemplates(db);
  const { pooled, unknown } = resolvePooledTemplates(settings.pooledTemplates, templates);
  const ready = readyCounts(db);
  const rows = templates.map((t) => ({ id: t.id, name: t.name, pooled: pooled.some((p) => p.id === t.id), ready: ready[t.id] ?? 0 }));
  for (const [id, n] of Object.entries(ready)) if (!templates.some((t) => t.id === id)) rows.push({ id, name: '(no template)', pooled: false, ready: n });
  return {
    templates: rows,
    total: Object.values(ready).reduce((a, b) => a + b, 0),
    claimedRows: poolRows(db, 'claimed').length,
    size: settings.poolSize,
    maxTotal: settings.poolMaxTotal,
    unknownTemplates: unknown,
  };
}

export interface DrainReport {
  containersRemoved: string[];
  volumesRemoved: string[];
  rowsDeleted: number;
  errors: string[];
}

/**
 * Removes every unclaimed pool container, volume and row: the ready rows with their resources, and any
 * `ah.type=warm-pool` container or `ah-pool-*` volume that no environment and no claimed row holds. Pause the
 * pool schedule first if the refill must not put new ones back.
 */
export async function drainPool({ db, docker }: Pick<ActivityDeps, 'db' | 'docker'>): Promise<DrainReport> {
  const report: DrainReport = { containersRemoved: [], volumesRemoved: [], rowsDeleted: 0, errors: [] };
  const held = () => {
    const env = environmentReferences(db);
    for (const r of poolRows(db, 'claimed')) {
      env.containers.add(r.container_id);
      env.volumes.add(r.volume_name);
    }
    return env;
  };
  for (const row of poolRows(db, 'ready')) {
    // Take the row first: a claim racing the drain either got it already or can no longer get it.
    if (!deletePoolRow(db, row.id, 'ready')) continue;
    report.rowsDeleted++;
    try {
      await ignoreNotFound(docker.removeContainer(row.container_id, { force: true }));
      report.containersRemoved.push(row.container_id);
      await ignoreNotFound(docker.removeVolume(row.volume_name));
      report.volumesRemoved.push(row.volume_name);
    } catch (err) {
      report.errors.push(`pool entry ${row.id}: ${(err as Error).message}`);
    }
  }
  const keep = held();
  for (const c of await docker.listContainers({ 'ah.type': 'warm-pool' })) {
    if (keep.containers.has(c.id) || report.containersRemoved.includes(c.id)) continue;
    try {
      await ignoreNotFound(docker.removeContainer(c.id, { force: true }));
      report.containersRemoved.push(c.id);
    } catch (err) {
      report.errors.push(`container ${c.name}: ${(err as Error).message}`);
    }
  }
  for (const v of await docker.listVolumes('ah-pool-')) {
    if (keep.volumes.has(v.name) || report.volumesRemoved.includes(v.name)) continue;
    try {
      await ignoreNotFound(docker.removeVolume(v.name));
      report.volumesRemoved.push(v.name);
    } catch (err) {
      report.errors.push(`volume ${v.name}: ${(err as Error).message}`);
    }
  }
  return report;
}

