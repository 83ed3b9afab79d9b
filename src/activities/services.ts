/**
 * The service lifecycle of a standalone host (`keeper service …`): containers as ah runs them (spec §9.3:
 * name `ah-<tenant>-<service>`, labels ah.tenant / ah.service, restart policy unless-stopped, the tenant's
 * network), with the operator rules that keep the loops honest: no start while the circuit is open, and a stop
 * is recorded before the container stops. Deploys are refused while the disk guard blocks.
 */
import { recordDeployment } from '../db/deployments';
import {
  deleteService, ensureTenant, insertDeployingService, markDeployed, markDeployFailed, newServiceId, readService,
  setOperatorStatus, type ServiceRecord,
} from '../db/service-lifecycle';
import { oneLine } from '../db/open';
import { isNotFound } from '../docker/errors';
import type { ActivityDeps } from './deps';
import { assertDiskAllows } from './disk';
import { resolveNetwork } from './networks';

export interface CreateServiceRequest {
  tenant: string;
  name: string;
  image: string;
  port?: number;
  env?: Record<string, string>;
  healthCmd?: string;
}

/** A refusal the operator can act on (exit code 1, one line). */
export class ServiceCommandError extends Error {
  override name = 'ServiceCommandError';
}

const now = () => Math.floor(Date.now() / 1000);
export const serviceContainerName = (tenant: string, serviceId: string) => `ah-${tenant}-${serviceId}`;
export const tenantNetwork = (tenant: string) => `ah-tenant-${tenant}`;

export function createServiceActivities(deps: ActivityDeps) {
  const { db, docker } = deps;

  function mustRead(id: string): ServiceRecord {
    const s = readService(db, id);
    if (!s) throw new ServiceCommandError(`no service ${id}`);
    return s;
  }

  function refuseWhileCircuitOpen(s: ServiceRecord, verb: string): void {
    if (s.circuitOpen) {
      throw new ServiceCommandError(`cannot ${verb} ${s.id}: its circuit breaker is open; run \`keeper circuit reset ${s.id}\``);
    }
  }

  const deployment = (s: ServiceRecord, status: 'running' | 'stopped' | 'failed', trigger: 'manual' | 'restart', error?: string) =>
    recordDeployment(db, { serviceId: s.id, tenantId: s.tenantId, image: s.image, status, trigger, error, at: now() });

  return {
    /** Writes the row (`deploying`), runs the container, then marks it `running`, or `failed` with the error. */
    async createService(req: CreateServiceRequest): Promise<ServiceRecord> {
      await assertDiskAllows(deps, 'service deploy');
      const id = newServiceId();
      db.transaction(() => {
        ensureTenant(db, req.tenant, now());
        insertDeployingService(db, { id, tenantId: req.tenant, name: req.name, image: req.image, port: req.port ?? 8000 }, now());
      })();
      try {
        const network = await resolveNetwork(db, docker, tenantNetwork(req.tenant));
        const containerId = await docker.createContainer({
          name: serviceContainerName(req.tenant, id),
          image: req.image,
          env: { ...(req.port ? { PORT: String(req.port) } : {}), ...req.env },
          labels: { 'ah.tenant': req.tenant, 'ah.service': id, 'ah.managed': 'true' },
          restartPolicy: 'unless-stopped',
          network,
          confined: { readonlyRootfs: true },
          healthcheck: req.healthCmd ? { cmd: ['sh', '-c', req.healthCmd], intervalMs: 10_000, timeoutMs: 5_000, retries: 3 } : undefined,
        });
        await docker.startContainer(containerId);
        markDeployed(db, id, containerId, now());
      } catch (err) {
        markDeployFailed(db, id, oneLine(err), now());
        deployment(mustRead(id), 'failed', 'manual', oneLine(err));
        throw new ServiceCommandError(`deploy of ${id} failed: ${oneLine(err)}`);
      }
      const s = mustRead(id);
      deployment(s, 'running', 'manual');
      return s;
    },

    async startService(id: string): Promise<ServiceRecord> {
      const s = mustRead(id);
      refuseWhileCircuitOpen(s, 'start');
      if (!s.containerId) throw new ServiceCommandError(`service ${id} has no container; create it again`);
      await docker.startContainer(s.containerId);
      if (!setOperatorStatus(db, id, 'running', now())) refuseWhileCircuitOpen(mustRead(id), 'start');
      deployment(s, 'running', 'manual');
      return mustRead(id);
    },

    /** `stopped` is written first: the reconciler watches only `running` services, so it never counts this stop. */
    async stopService(id: string): Promise<ServiceRecord> {
      const s = mustRead(id);
      setOperatorStatus(db, id, 'stopped', now());
      if (s.containerId) await docker.stopContainer(s.containerId).catch((err) => { if (!isNotFound(err)) throw err; });
      deployment(s, 'stopped', 'manual');
      return mustRead(id);
    },

    async restartService(id: string): Promise<ServiceRecord> {
      const s = mustRead(id);
      refuseWhileCircuitOpen(s, 'restart');
      if (!s.containerId) throw new ServiceCommandError(`service ${id} has no container; create it again`);
      await docker.restartContainer(s.containerId);
      setOperatorStatus(db, id, 'running', now());
      deployment(s, 'running', 'restart');
      return mustRead(id);
    },

    /** Stops and removes the container, then deletes the row (its deployments go with it). */
    async removeService(id: string): Promise<void> {
      const s = mustRead(id);
      setOperatorStatus(db, id, 'stopped', now());
      if (s.containerId) await docker.removeContainer(s.containerId, { force: true }).catch((err) => { if (!isNotFound(err)) throw err; });
      try {
        deleteService(db, id);
      } catch (err) {
        throw new ServiceCommandError(`container removed, but the row of ${id} stays: ${oneLine(err)} (snapshots still reference it)`);
      }
    },

    async serviceLogs(id: string, tail = 100): Promise<string> {
      const s = mustRead(id);
      if (!s.containerId) throw new ServiceCommandError(`service ${id} has no container`);
      return docker.containerLogs(s.containerId, tail);
    },
  };
}
