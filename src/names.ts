/**
 * ah's names for the Docker resources of a host: what ah's API and tools look for, so keeper must make them
 * the same way, and what GC uses to tell ah's resources from anything else on the engine.
 */

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
