/**
 * Activities of the circuit breaker workflow. `holdCircuit` reads the open circuit and makes sure its container
 * is stopped (kept, for its logs); `recoverCircuit` closes it once, by a compare-and-set on its generation.
 */
import { DockerError } from '../docker/client';
import { ignoreNotFound } from '../docker/errors';
import { setLook } from '../db/looks';
import { closeCircuit, readCircuit, type Recovery } from '../db/services';
import { createLogger } from '../log';
import { validContainerId } from './reconcile-observe';
import type { ActivityDeps } from './deps';

export interface HeldCircuit {
  open: boolean;
  generation: number;
  retryAt: number; // unix seconds
  /** Milliseconds until retryAt on this host's clock, so the workflow's timer does not depend on the server's. */
  remainingMs: number;
}

export interface RecoveryResult {
  recovered: boolean;
  status?: 'running' | 'stopped';
}

const nowSec = () => Math.floor(Date.now() / 1000);

export function createCircuitActivities({ db, docker, settings }: ActivityDeps) {
  const log = createLogger(settings.logFormat, { host: settings.hostId, loop: 'circuit' });
  return {
    async holdCircuit(serviceId: string): Promise<HeldCircuit> {
      const c = readCircuit(db, serviceId);
      if (!c?.open) return { open: false, generation: c?.generation ?? 0, retryAt: 0, remainingMs: 0 };
      if (validContainerId(c.containerId)) await ignoreNotFound(docker.stopContainer(c.containerId as string));
      const retryAt = c.retryAt ?? nowSec();
      return { open: true, generation: c.generation, retryAt, remainingMs: Math.max(0, retryAt * 1000 - Date.now()) };
    },

    /** Closes generation `generation` of the circuit; any number of calls recover it at most once. */
    async recoverCircuit(serviceId: string, generation: number, trigger: Recovery['trigger']): Promise<RecoveryResult> {
      const c = readCircuit(db, serviceId);
      if (!c?.open || c.generation !== generation) return { recovered: false };
      let status: Recovery['status'] = 'stopped';
      let error: string | undefined;
      const cid = c.containerId as string;
      if (settings.recovery === 'restart' && validContainerId(cid)) {
        try {
          await docker.startContainer(cid);
          status = 'running';
        } catch (err) {
          if (!(err instanceof DockerError && err.isNotFound)) throw err; // transient: the activity retries
          error = 'kept container is gone; redeploy required';
        }
      }
      const now = nowSec();
      const recovered = closeCircuit(db, { serviceId, generation, trigger, status, error }, now);
      if (recovered && status === 'running') {
        // A start through the API resets RestartCount: later deaths are counted from 0.
        setLook(db, serviceId, { containerId: cid, state: 'running', restartCount: 0, health: '' }, now);
      }
      if (recovered) log.info('circuit closed', { serviceId, generation, trigger, status });
      return recovered ? { recovered, status } : { recovered };
    },
  };
}

