/**
 * The pool as an operator sees and empties it: `keeper pool status` (ready containers per template, the template
 * images' background pulls, the last refill) and `keeper pool drain`.
 */
import { imagePulls } from '../../db/image-pulls';
import { lastLoopResult, type LoopResult } from '../../db/loop-results';
import { deletePoolRow, heldPoolResources, listTemplates, poolRows, readyByTemplate } from '../../db/pool';
import { ignoreNotFound } from '../../docker/errors';
import { LABEL, POOL_VOLUME_PREFIX, RESOURCE_TYPE } from '../../names';
import type { PullView } from '../../contracts/pool';
import { pullView } from '../../policy/image-pull';
import { resolvePooledTemplates } from '../../policy/pool';
import type { Settings } from '../../settings';
import type { PoolRefillResult } from '../../contracts/pool';
import type { HostDeps } from '../deps';
import { processAlive } from './pull';

export interface PoolStats {
  templates: { id: string; name: string; pooled: boolean; ready: number }[];
  total: number;
  claimedRows: number;
  size: number;
  maxTotal: number;
  unknownTemplates: string[];
}

/** Ready containers per template (0 for templates that have none, pooled or not) and the total. */
export function poolStats(db: HostDeps['db'], settings: Pick<Settings, 'pooledTemplates' | 'poolSize' | 'poolMaxTotal'>): PoolStats {
  const { pooled, unknown } = resolvePooledTemplates(settings.pooledTemplates, listTemplates(db));
  const rows = readyByTemplate(db).map((t) => ({
    id: t.id,
    name: t.name ?? '(no template)',
    pooled: pooled.some((p) => p.id === t.id),
    ready: t.ready,
  }));
  return {
    templates: rows,
    total: rows.reduce((a, t) => a + t.ready, 0),
    claimedRows: poolRows(db, 'claimed').length,
    size: settings.poolSize,
    maxTotal: settings.poolMaxTotal,
    unknownTemplates: unknown,
  };
}

export interface PoolStatusReport extends PoolStats {
  lastRefill: LoopResult<PoolRefillResult> | null;
  /**
   * The background pull of each template image keeper pulled or is pulling, with the templates on it; `ownerGone`
   * when a pull's process has ended without finishing it (the next refill starts it again).
   */
  pulls: (PullView & { image: string; templates: string[]; ownerGone: boolean })[];
}

export function poolStatus({ db, settings }: Pick<HostDeps, 'db' | 'settings'>): PoolStatusReport {
  const templates = listTemplates(db);
  const pulls = imagePulls(db).map((r) => ({
    image: r.image,
    templates: templates.filter((t) => t.baseImage === r.image).map((t) => t.name),
    ...pullView(r),
    ownerGone: r.state === 'pulling' && !processAlive(r.ownerPid),
  }));
  return { ...poolStats(db, settings), lastRefill: lastLoopResult<PoolRefillResult>(db, 'pool'), pulls };
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
export async function drainPool({ db, docker }: Pick<HostDeps, 'db' | 'docker'>): Promise<DrainReport> {
  const report: DrainReport = { containersRemoved: [], volumesRemoved: [], rowsDeleted: 0, errors: [] };
  const attempt = async (what: string, work: () => Promise<void>) =>
    work().catch((err: Error) => void report.errors.push(`${what}: ${err.message}`));
  for (const row of poolRows(db, 'ready')) {
    // Take the row first: a claim racing the drain either got it already or can no longer get it.
    if (!deletePoolRow(db, row.id, 'ready')) continue;
    report.rowsDeleted++;
    await attempt(`pool entry ${row.id}`, async () => {
      await ignoreNotFound(docker.removeContainer(row.containerId, { force: true }));
      report.containersRemoved.push(row.containerId);
      await ignoreNotFound(docker.removeVolume(row.volumeName));
      report.volumesRemoved.push(row.volumeName);
    });
  }
  const held = heldPoolResources(db);
  for (const c of await docker.listContainers({ [LABEL.type]: RESOURCE_TYPE.warmPool })) {
    if (held.containers.has(c.id) || report.containersRemoved.includes(c.id)) continue;
    await attempt(`container ${c.name}`, async () => {
      await ignoreNotFound(docker.removeContainer(c.id, { force: true }));
      report.containersRemoved.push(c.id);
    });
  }
  for (const v of await docker.listVolumes(POOL_VOLUME_PREFIX)) {
    if (held.volumes.has(v.name) || report.volumesRemoved.includes(v.name)) continue;
    await attempt(`volume ${v.name}`, async () => {
      await ignoreNotFound(docker.removeVolume(v.name));
      report.volumesRemoved.push(v.name);
    });
  }
  return report;
}
