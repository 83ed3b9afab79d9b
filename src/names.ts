/**
 * ah's conventions for the Docker resources of a host, in one place: label keys and values, and names and
 * prefixes. ah's API and tools look for them, so keeper must make resources the same way, and GC uses them to
 * tell ah's resources from anything else on the engine.
 */

/** ah's label keys. */
export const LABEL = {
  service: 'ah.service',
  tenant: 'ah.tenant',
  managed: 'ah.managed',
  type: 'ah.type',
  template: 'ah.template',
  environment: 'ah.environment',
  poolEntry: 'ah.pool-entry',
} as const;
/** Every ah label starts with it: GC attributes an image to ah by such a label. */
export const LABEL_PREFIX = 'ah.';
/** Values of `ah.type`. */
export const RESOURCE_TYPE = { warmPool: 'warm-pool', environment: 'environment', database: 'database' } as const;
/** `ah.managed`'s value on what ah (or keeper for it) made. */
export const MANAGED = 'true';
/** Every volume ah makes starts with it (the kinds are VOLUME_PREFIXES). */
export const AH_NAME_PREFIX = 'ah-';

/**
 * ah's build images: `127.0.0.1:5000/ah/<tenant>-<service>:<build>`, built by Nixpacks (no label) and pushed to
 * the host's registry, so an untagged one still names its repository in its RepoDigests.
 */
export const BUILD_IMAGE_REPO_PREFIX = '127.0.0.1:5000/ah/';
export const buildImageRepo = (tenantId: string, serviceId: string) => `${BUILD_IMAGE_REPO_PREFIX}${tenantId}-${serviceId}`;

/** The warm pool's network; pool containers sit on it until claimed. */
export const POOL_NETWORK = 'ah-pool';
export const TENANT_NETWORK_PREFIX = 'ah-tenant-';
/** Volumes of databases, environments, kanbans and pool entries: GC touches no other volume. */
export const VOLUME_PREFIXES = ['ah-db-', 'ah-env-', 'ah-kanban-', 'ah-pool-'] as const;
export const POOL_VOLUME_PREFIX = 'ah-pool-';
/** ah's ingress proxy: attached to every tenant network, so it alone never makes a network "in use". */
export const TRAEFIK_CONTAINER = 'paas-traefik';

export const tenantNetworkName = (tenantId: string) => `${TENANT_NETWORK_PREFIX}${tenantId}`;
export const serviceContainerName = (tenantId: string, serviceId: string) => `ah-${tenantId}-${serviceId}`;
export const environmentContainerName = (tenantId: string, envId: string) => `ah-env-${tenantId}-${envId}`;
export const environmentVolumeName = (envId: string) => `ah-env-${envId}`;
/** ah's name for a pool container (tenant "pool", environment = the entry id); a claim renames it. */
export const poolContainerName = (entryId: string) => `ah-env-pool-${entryId}`;
export const poolVolumeName = (entryId: string) => `${POOL_VOLUME_PREFIX}${entryId}`;

/**
 * keeper's own: the volume the event watcher creates and removes at once to prove that a stream it reopened delivers
 * live events (src/watch/event-watcher.ts). Not `ah-`, so GC never takes it for ah's; labelled, so an operator can tell it.
 */
export const KEEPER_PROBE_LABEL = 'keeper.probe';
export const eventProbeVolume = (hostId: string) => `keeper-events-probe-${hostId}`;
