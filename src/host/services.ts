/**
 * The service lifecycle of a standalone host (`keeper service …`): containers as ah runs them (name
 * `ah-<tenant>-<service>`, labels ah.tenant / ah.service, restart policy unless-stopped, the tenant's network),
 * with the operator rules that keep the loops honest: no start while the circuit is open, and a stop is recorded
 * before the container stops. Deploys are refused while the disk guard blocks.
 */
import { recordDeployment } from '../db/deployments';
import {
  deleteService,
  insertDeployingService,
  markDeployed,
  markDeployFailed,
  newServiceId,
  readService,
  setOperatorStatus,
  type ServiceRecord,
} from '../db/service-lifecycle';
import { oneLine } from '../text';
import { ignoreNotFound } from '../docker/errors';
import { LABEL, MANAGED, serviceContainerName, tenantNetworkName } from '../names';
import { unixSeconds } from '../time';
import type { HostDeps } from './deps';
import { assertDiskAllows } from './disk';
import { resolveNetwork } from './networks';
import { assertTenantRuntime } from './tenant-runtime';

export type { ServiceRecord };

export interface CreateServiceRequest {
  tenant: string;
  name: string;
  image: string;
  port?: number;
  env?: Record<string, string>;
  /** keeper.* labels (e.g. the crash policy); ah's own labels always win. */
  labels?: Record<string, string>;
  healthCmd?: string;
}

/** A refusal the operator can act on (exit code 1, one line). */
export class ServiceCommandError extends Error {
  override name = 'ServiceCommandError';
}

type ServiceDeps = Pick<HostDeps, 'db' | 'docker' | 'settings' | 'clock'>;

function mustRead({ db }: ServiceDeps, id: string): ServiceRecord {
  const s = readService(db, id);
  if (!s) throw new ServiceCommandError(`no service ${id}`);
  return s;
}

function refuseWhileCircuitOpen(s: ServiceRecord, verb: string): void {
  if (s.circuitOpen) {
    throw new ServiceCommandError(`cannot ${verb} ${s.id}: its circuit breaker is open; run \`keeper circuit reset ${s.id}\``);
  }
}

function recordManual(
  deps: ServiceDeps,
  s: ServiceRecord,
  status: 'running' | 'stopped' | 'failed',
  trigger: 'manual' | 'restart',
  error?: string,
): void {
  recordDeployment(deps.db, { serviceId: s.id, tenantId: s.tenantId, image: s.image, status, trigger, error, at: unixSeconds(deps.clock) });
}

/**
 * Writes the row (`deploying`), runs the container under the tenant runtime, then marks it `running`, or
 * `failed` with the error. A blocked disk or an engine without the tenant runtime refuses it before the row.
 */
export async function createService(deps: ServiceDeps, req: CreateServiceRequest): Promise<ServiceRecord> {
  const { db, docker, settings } = deps;
  const now = () => unixSeconds(deps.clock);
  await assertDiskAllows(deps, 'service deploy');
  await assertTenantRuntime(deps);
  const id = newServiceId();
  insertDeployingService(db, { id, tenantId: req.tenant, name: req.name, image: req.image, port: req.port ?? 8000 }, now());
  try {
    const network = await resolveNetwork(db, docker, tenantNetworkName(req.tenant));
    const containerId = await docker.createContainer({
      name: serviceContainerName(req.tenant, id),
      image: req.image,
      env: { ...(req.port ? { PORT: String(req.port) } : {}), ...req.env },
      labels: { ...req.labels, [LABEL.tenant]: req.tenant, [LABEL.service]: id, [LABEL.managed]: MANAGED },
      restartPolicy: 'unless-stopped',
      network,
      confined: { readonlyRootfs: true, runtime: settings.tenantRuntime },
      healthcheck: req.healthCmd ? { cmd: ['sh', '-c', req.healthCmd], intervalMs: 10_000, timeoutMs: 5_000, retries: 3 } : undefined,
    });
    await docker.startContainer(containerId);
    markDeployed(db, id, containerId, now());
  } catch (err) {
    markDeployFailed(db, id, oneLine(err), now());
    recordManual(deps, mustRead(deps, id), 'failed', 'manual', oneLine(err));
    throw new ServiceCommandError(`deploy of ${id} failed: ${oneLine(err)}`);
  }
  const s = mustRead(deps, id);
  recordManual(deps, s, 'running', 'manual');
  return s;
}

export async function startService(deps: ServiceDeps, id: string): Promise<ServiceRecord> {
  const s = mustRead(deps, id);
  refuseWhileCircuitOpen(s, 'start');
  if (!s.containerId) throw new ServiceCommandError(`service ${id} has no container; create it again`);
  await deps.docker.startContainer(s.containerId);
  if (!setOperatorStatus(deps.db, id, 'running', unixSeconds(deps.clock))) refuseWhileCircuitOpen(mustRead(deps, id), 'start');
  recordManual(deps, s, 'running', 'manual');
  return mustRead(deps, id);
}

/** `stopped` is written first: the reconciler watches only `running` services, so it never counts this stop. */
export async function stopService(deps: ServiceDeps, id: string): Promise<ServiceRecord> {
  const s = mustRead(deps, id);
  setOperatorStatus(deps.db, id, 'stopped', unixSeconds(deps.clock));
  if (s.containerId) await ignoreNotFound(deps.docker.stopContainer(s.containerId));
  recordManual(deps, s, 'stopped', 'manual');
  return mustRead(deps, id);
}

export async function restartService(deps: ServiceDeps, id: string): Promise<ServiceRecord> {
  const s = mustRead(deps, id);
  refuseWhileCircuitOpen(s, 'restart');
  if (!s.containerId) throw new ServiceCommandError(`service ${id} has no container; create it again`);
  await deps.docker.restartContainer(s.containerId);
  setOperatorStatus(deps.db, id, 'running', unixSeconds(deps.clock));
  recordManual(deps, s, 'running', 'restart');
  return mustRead(deps, id);
}

/** Stops and removes the container, then deletes the row (its deployments go with it). */
export async function removeService(deps: ServiceDeps, id: string): Promise<void> {
  const s = mustRead(deps, id);
  setOperatorStatus(deps.db, id, 'stopped', unixSeconds(deps.clock));
  if (s.containerId) await ignoreNotFound(deps.docker.removeContainer(s.containerId, { force: true }));
  try {
    deleteService(deps.db, id);
  } catch (err) {
    throw new ServiceCommandError(`container removed, but the row of ${id} stays: ${oneLine(err)} (snapshots still reference it)`);
  }
}

export async function serviceLogs(deps: ServiceDeps, id: string, tail = 100): Promise<string> {
  const s = mustRead(deps, id);
  if (!s.containerId) throw new ServiceCommandError(`service ${id} has no container`);
  return deps.docker.containerLogs(s.containerId, tail);
}
