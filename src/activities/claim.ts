/**
 * The claim of an environment, pool first (ah's environment create, spec §3 E-2). NOT an activity or a
 * workflow: `keeper pool claim` calls it directly, because its whole point is latency (one SQL update plus
 * concurrent engine calls). It shares no lock with refill: the only coordination is SQLite's, inside one short
 * transaction that makes no Docker call (W-P5).
 */
import crypto from 'node:crypto';
import {
  claimPoolEntry, EnvironmentExistsError, insertCreatingEnvironment, markEnvironmentFailed, markEnvironmentRunning,
  releaseClaim, setEnvironmentResources, tenantExists,
} from '../db/environments';
import { findTemplate, type TemplateRow } from '../db/pool';
import type { DockerClient } from '../docker/client';
import { ignoreNotFound } from '../docker/errors';
import { poolNetworkIsolates } from '../policy/pool';
import type { ActivityDeps } from './deps';
import { assertDiskAllows, type DiskSettings } from './disk';
import { resolveNetwork } from './networks';
import {
  environmentContainerName, environmentSpec, environmentVolumeName, nowSeconds, POOL_NETWORK, tenantNetworkName,
} from './pool';

export class ClaimRequestError extends Error {
  override name = 'ClaimRequestError';
}

export interface ClaimRequest {
  tenant: string;
  name: string;
  /** Template id or name, as ah accepts it; default `default`. */
  template?: string;
  leaseSeconds?: number;
}

export interface ClaimResult {
  envId: string;
  tenant: string;
  name: string;
  templateId: string;
  mode: 'warm' | 'cold';
  containerId: string;
  containerName: string;
  volume: string;
  network: string;
  leaseExpiresAt: number;
  poolEntry?: string;
  /** Warm claims: whether the container left `ah-pool` in the claim, or the next refill detaches it. */
  poolDetach?: 'done' | 'deferred';
  /** Why a claim that found a ready row still went cold. */
  fallbackReason?: string;
}

const ENV_NAME = /^[a-zA-Z][a-zA-Z0-9_-]*$/;

/**
 * ah's environment create (spec §3 E-2), pool first: takes a ready pool row with one atomic SQL update, moves
 * its container to the tenant network, renames it `ah-env-<tenant>-<envId>` and records the environment,
 * which keeps the pool volume. With no ready row, or when the move fails (its container and volume are then
 * removed and its row released), it creates the environment cold; given `settings`, a cold create is refused
 * (DiskBlockedError) while the disk guard blocks. It does not trigger the refill itself:
 * callers do that after it returns (see src/cli/pool.ts), so the claim's latency never includes it.
 */
export async function claimEnvironment(
  { db, docker, settings }: Pick<ActivityDeps, 'db' | 'docker'> & { settings?: DiskSettings },
  req: ClaimRequest,
): Promise<ClaimResult> {
  if (!ENV_NAME.test(req.name) || req.name.length > 63) {
    throw new ClaimRequestError(`invalid environment name "${req.name}" (a letter, then letters, digits, _ or -; at most 63)`);
  }
  const lease = req.leaseSeconds ?? 3600;
  if (!Number.isInteger(lease) || lease < 300 || lease > 86400) {
    throw new ClaimRequestError('lease_duration_seconds must be between 300 and 86400');
  }
  const templateArg = req.template ?? 'default';
  const template = findTemplate(db, templateArg);
  if (!template) throw new ClaimRequestError(`template "${templateArg}" not found`);
  if (!tenantExists(db, req.tenant)) throw new ClaimRequestError(`tenant "${req.tenant}" not found`);

  const envId = crypto.randomBytes(16).toString('hex');
  try {
    insertCreatingEnvironment(db, { id: envId, tenantId: req.tenant, name: req.name, templateId: templateArg, leaseSeconds: lease, now: nowSeconds() });
  } catch (err) {
    if (err instanceof EnvironmentExistsError) throw new ClaimRequestError(err.message);
    throw err;
  }
  const network = tenantNetworkName(req.tenant);
  const containerName = environmentContainerName(req.tenant, envId);
  const base = { envId, tenant: req.tenant, name: req.name, templateId: template.id, network, containerName };

  let networkId: string;
  try {
    networkId = await resolveNetwork(db, docker, network);
  } catch (err) {
    markEnvironmentFailed(db, envId, nowSeconds());
    throw err;
  }

  let fallbackReason: string | undefined;
  let entry: ReturnType<typeof claimPoolEntry>;
  try {
    entry = claimPoolEntry(db, envId, template.id, nowSeconds());
  } catch (err) {
    markEnvironmentFailed(db, envId, nowSeconds());
    throw err;
  }
  if (entry) {
    try {
      const poolDetach = await moveToTenantNetwork(docker, entry.container_id, networkId, containerName);
      const now = nowSeconds();
      markEnvironmentRunning(db, { id: envId, containerId: entry.container_id, volumeName: entry.volume_name, now, leaseSeconds: lease, poolEntryId: entry.id });
      return {
        ...base, mode: 'warm', containerId: entry.container_id, volume: entry.volume_name, leaseExpiresAt: now + lease, poolEntry: entry.id, poolDetach,
      };
    } catch (err) {
      fallbackReason = `pool entry ${entry.id} could not be moved: ${err instanceof Error ? err.message : String(err)}`;
      await releaseFailedClaim(db, docker, envId, entry);
    }
  }
  // A cold create takes new disk (a warm one does not): with settings given, it is disk-guarded (W-P7).
  if (settings) {
    try {
      await assertDiskAllows({ docker, settings }, 'cold environment create');
    } catch (err) {
      markEnvironmentFailed(db, envId, nowSeconds());
      throw err;
    }
  }
  return { ...(await createCold(db, docker, envId, template, { ...base, networkId }, lease)), fallbackReason };
}

/**
 * Joins the claimed container to its tenant network and gives it its environment name, concurrently (the
 * engine overlaps most of the rename with the connect), while the pool network is inspected. Leaving `ah-pool`,
 * the slowest call, is left to the next refill (which the claim triggers) when the pool network isolates its
 * members, and done here otherwise. All calls have settled before an error is thrown, so the caller's cleanup
 * never races one still in flight.
 */
async function moveToTenantNetwork(
  docker: DockerClient,
  containerId: string,
  tenantNetworkId: string,
  containerName: string,
): Promise<'done' | 'deferred'> {
  const [connected, renamed, poolNet] = await Promise.allSettled([
    docker.connectNetwork(tenantNetworkId, containerId),
    docker.renameContainer(containerId, containerName),
    docker.inspectNetwork(POOL_NETWORK),
  ]);
  for (const step of [connected, renamed]) if (step.status === 'rejected') throw step.reason;
  if (poolNet.status === 'fulfilled' && poolNetworkIsolates(poolNet.value)) return 'deferred';
  await docker.disconnectNetwork(POOL_NETWORK, containerId, true);
  return 'done';
}

/** Removes what a failed warm move took. Only when both are gone does the claimed row go too. */
async function releaseFailedClaim(
  db: ActivityDeps['db'],
  docker: DockerClient,
  envId: string,
  entry: { id: string; container_id: string; volume_name: string },
): Promise<void> {
  let clean = true;
  await ignoreNotFound(docker.removeContainer(entry.container_id, { force: true })).catch(() => (clean = false));
  if (clean) await ignoreNotFound(docker.removeVolume(entry.volume_name)).catch(() => (clean = false));
  // The environment row stops pointing at them either way; a claimed row that could not be cleaned stays as
  // the owner of what is left, and the next refill reports it as stranded.
  releaseClaim(db, envId, clean ? entry.id : '', nowSeconds());
}

async function createCold(
  db: ActivityDeps['db'],
  docker: DockerClient,
  envId: string,
  template: TemplateRow,
  base: { envId: string; tenant: string; name: string; templateId: string; network: string; networkId: string; containerName: string },
  lease: number,
): Promise<ClaimResult> {
  const volume = environmentVolumeName(envId);
  setEnvironmentResources(db, envId, '', volume, nowSeconds());
  let containerId: string | undefined;
  try {
    await docker.createVolume(volume, { 'ah.managed': 'true', 'ah.type': 'environment', 'ah.tenant': base.tenant, 'ah.environment': envId });
    containerId = await docker.createContainer(
      environmentSpec(template, {
        name: base.containerName,
        network: base.networkId,
        volume,
        labels: {
          'ah.managed': 'true', 'ah.type': 'environment', 'ah.tenant': base.tenant, 'ah.environment': envId,
          'ah.template': template.id, 'traefik.enable': 'false',
        },
      }),
    );
    setEnvironmentResources(db, envId, containerId, volume, nowSeconds());
    await docker.startContainer(containerId);
    const now = nowSeconds();
    markEnvironmentRunning(db, { id: envId, containerId, volumeName: volume, now, leaseSeconds: lease });
    const { networkId: _id, ...rest } = base;
    return { ...rest, mode: 'cold', containerId, volume, leaseExpiresAt: now + lease };
  } catch (err) {
    await ignoreNotFound(docker.removeContainer(containerId ?? base.containerName, { force: true })).catch(() => undefined);
    await ignoreNotFound(docker.removeVolume(volume)).catch(() => undefined);
    markEnvironmentFailed(db, envId, nowSeconds());
    throw err;
  }
}
