/**
 * The claim of an environment, pool first (ah's environment create). Not an activity: `keeper pool claim` calls
 * it directly, because its whole point is latency (one SQL update plus concurrent engine calls). It shares no
 * lock with refill: the only coordination is SQLite's, inside one short transaction that makes no Docker call
 * (W-P5 in docs/ah-differences.md).
 */
import crypto from 'node:crypto';
import {
  claimPoolEntry,
  EnvironmentExistsError,
  insertCreatingEnvironment,
  markEnvironmentFailed,
  markEnvironmentRunning,
  releaseClaim,
  setEnvironmentResources,
  tenantExists,
  type ClaimedEntry,
} from '../../db/environments';
import { findTemplate, type TemplateRow } from '../../db/pool';
import type { Engine } from '../../docker/engine';
import { ignoreNotFound } from '../../docker/errors';
import {
  environmentContainerName,
  environmentVolumeName,
  LABEL,
  MANAGED,
  POOL_NETWORK,
  RESOURCE_TYPE,
  tenantNetworkName,
} from '../../names';
import { poolNetworkIsolates } from '../../policy/pool';
import { systemClock, unixSeconds, type Clock } from '../../time';
import type { HostDeps } from '../deps';
import { assertDiskAllows, type GuardDeps } from '../disk';
import { environmentLabels, environmentSpec } from '../environment-spec';
import { resolveNetwork } from '../networks';

/**
 * What a claim needs. `tenantRuntime` (--tenant-runtime) is the runtime its container runs under: a cold create
 * names it, and a warm claim takes only a pool container recorded under it. Without settings there is no disk
 * guard (benchmarks); without a clock, the system's.
 */
export type ClaimDeps = Pick<HostDeps, 'db' | 'docker'> & { tenantRuntime: string; settings?: GuardDeps['settings']; clock?: Clock };

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

interface Claim {
  deps: ClaimDeps & { clock: Clock };
  envId: string;
  template: TemplateRow;
  leaseSeconds: number;
  base: { envId: string; tenant: string; name: string; templateId: string; network: string; containerName: string };
}

/**
 * ah's environment create, pool first: takes a ready pool row whose container runs under the tenant runtime
 * with one atomic SQL update (see claimPoolEntry: a container of another runtime is never handed out), moves its container
 * to the tenant network, renames it `ah-env-<tenant>-<envId>` and records the environment, which keeps the pool
 * volume. With no ready row, or when the move fails (its container and volume are then removed and its row
 * released), it creates the environment cold; given `settings`, a cold create is refused (DiskBlockedError)
 * while the disk guard blocks. It does not trigger the refill itself: callers do that after it returns (see
 * src/cli/pool.ts), so the claim's latency never includes it.
 */
export async function claimEnvironment(given: ClaimDeps, req: ClaimRequest): Promise<ClaimResult> {
  const deps = { ...given, clock: given.clock ?? systemClock };
  const claim = startClaim(deps, req);
  const { db, docker, clock } = deps;
  const networkId = await failingEnvironment(claim, () => resolveNetwork(db, docker, claim.base.network));
  const entry = await failingEnvironment(claim, async () =>
    claimPoolEntry(db, claim.envId, claim.template.id, deps.tenantRuntime, unixSeconds(clock)),
  );
  let fallbackReason: string | undefined;
  if (entry) {
    try {
      return await warmClaim(claim, entry, networkId);
    } catch (err) {
      fallbackReason = `pool entry ${entry.id} could not be moved: ${err instanceof Error ? err.message : String(err)}`;
      await releaseFailedClaim(claim, entry);
    }
  }
  // A cold create takes new disk (a warm one does not): with settings given, it is disk-guarded (W-P7).
  const { settings } = deps;
  if (settings) await failingEnvironment(claim, () => assertDiskAllows({ docker, settings }, 'cold environment create'));
  return { ...(await createCold(claim, networkId)), fallbackReason };
}

/** Checks the request and writes the environment row (`creating`); a bad request changes nothing. */
function startClaim(deps: Claim['deps'], req: ClaimRequest): Claim {
  if (!ENV_NAME.test(req.name) || req.name.length > 63) {
    throw new ClaimRequestError(`invalid environment name "${req.name}" (a letter, then letters, digits, _ or -; at most 63)`);
  }
  const leaseSeconds = req.leaseSeconds ?? 3600;
  if (!Number.isInteger(leaseSeconds) || leaseSeconds < 300 || leaseSeconds > 86400) {
    throw new ClaimRequestError('lease_duration_seconds must be between 300 and 86400');
  }
  const templateArg = req.template ?? 'default';
  const template = findTemplate(deps.db, templateArg);
  if (!template) throw new ClaimRequestError(`template "${templateArg}" not found`);
  if (!tenantExists(deps.db, req.tenant)) throw new ClaimRequestError(`tenant "${req.tenant}" not found`);
  const envId = crypto.randomBytes(16).toString('hex');
  try {
    insertCreatingEnvironment(deps.db, {
      id: envId,
      tenantId: req.tenant,
      name: req.name,
      templateId: templateArg,
      leaseSeconds,
      now: unixSeconds(deps.clock),
    });
  } catch (err) {
    if (err instanceof EnvironmentExistsError) throw new ClaimRequestError(err.message);
    throw err;
  }
  const base = {
    envId,
    tenant: req.tenant,
    name: req.name,
    templateId: template.id,
    network: tenantNetworkName(req.tenant),
    containerName: environmentContainerName(req.tenant, envId),
  };
  return { deps, envId, template, leaseSeconds, base };
}

/** Runs a step of the claim; if it throws, the environment row is marked failed first. */
async function failingEnvironment<T>(claim: Claim, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    markEnvironmentFailed(claim.deps.db, claim.envId, unixSeconds(claim.deps.clock));
    throw err;
  }
}

async function warmClaim(claim: Claim, entry: ClaimedEntry, networkId: string): Promise<ClaimResult> {
  const { db, docker, clock } = claim.deps;
  const poolDetach = await moveToTenantNetwork(docker, entry.containerId, networkId, claim.base.containerName);
  const now = unixSeconds(clock);
  markEnvironmentRunning(db, {
    id: claim.envId,
    containerId: entry.containerId,
    volumeName: entry.volumeName,
    now,
    leaseSeconds: claim.leaseSeconds,
    poolEntryId: entry.id,
  });
  return {
    ...claim.base,
    mode: 'warm',
    containerId: entry.containerId,
    volume: entry.volumeName,
    leaseExpiresAt: now + claim.leaseSeconds,
    poolEntry: entry.id,
    poolDetach,
  };
}

/**
 * Joins the claimed container to its tenant network and gives it its environment name, concurrently (the
 * engine overlaps most of the rename with the connect), while the pool network is inspected. Leaving `ah-pool`,
 * the slowest call, is left to the next refill (which the claim triggers) when the pool network isolates its
 * members, and done here otherwise. All calls have settled before an error is thrown, so the caller's cleanup
 * never races one still in flight.
 */
async function moveToTenantNetwork(
  docker: Engine,
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
async function releaseFailedClaim(claim: Claim, entry: ClaimedEntry): Promise<void> {
  const { db, docker, clock } = claim.deps;
  let clean = true;
  await ignoreNotFound(docker.removeContainer(entry.containerId, { force: true })).catch(() => (clean = false));
  if (clean) await ignoreNotFound(docker.removeVolume(entry.volumeName)).catch(() => (clean = false));
  // The environment row stops pointing at them either way; a claimed row that could not be cleaned stays as
  // the owner of what is left, and the next refill reports it as stranded.
  releaseClaim(db, claim.envId, clean ? entry.id : '', unixSeconds(clock));
}

async function createCold(claim: Claim, networkId: string): Promise<ClaimResult> {
  const { db, docker, clock } = claim.deps;
  const { envId, base, template } = claim;
  const volume = environmentVolumeName(envId);
  setEnvironmentResources(db, envId, '', volume, unixSeconds(clock));
  let containerId: string | undefined;
  try {
    await docker.createVolume(volume, {
      [LABEL.managed]: MANAGED,
      [LABEL.type]: RESOURCE_TYPE.environment,
      [LABEL.tenant]: base.tenant,
      [LABEL.environment]: envId,
    });
    const labels = environmentLabels(base.tenant, envId, template.id);
    const runtime = claim.deps.tenantRuntime;
    containerId = await docker.createContainer(
      environmentSpec(template, { name: base.containerName, network: networkId, volume, labels, runtime }),
    );
    setEnvironmentResources(db, envId, containerId, volume, unixSeconds(clock));
    await docker.startContainer(containerId);
    const now = unixSeconds(clock);
    markEnvironmentRunning(db, { id: envId, containerId, volumeName: volume, now, leaseSeconds: claim.leaseSeconds });
    return { ...base, mode: 'cold', containerId, volume, leaseExpiresAt: now + claim.leaseSeconds };
  } catch (err) {
    await ignoreNotFound(docker.removeContainer(containerId ?? base.containerName, { force: true })).catch(() => undefined);
    await ignoreNotFound(docker.removeVolume(volume)).catch(() => undefined);
    markEnvironmentFailed(db, envId, unixSeconds(clock));
    throw err;
  }
}
