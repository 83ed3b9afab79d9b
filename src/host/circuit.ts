/**
 * An open circuit's two effects: holding it (its container stopped but kept, for its logs) and recovering it
 * once, by a compare-and-set on its generation, so any number of attempts close one opening at most once.
 */
import { DockerError, ignoreNotFound } from '../docker/errors';
import { recordCircuitHold } from '../db/circuit-holds';
import { deathsOfWindow } from '../db/crash-records';
import { setLook } from '../db/looks';
import { closeCircuit, listCircuits, readCircuit, type CircuitRow, type Recovery } from '../db/services';
import type { HeldCircuit, RecoveryResult } from '../contracts/circuit';
import { isValidContainerId } from '../policy/rows';
import { unixSeconds } from '../time';
import type { HostDeps } from './deps';

/** An alert and a memo carry at most this many deaths: the threshold's worth, by default. */
export const DEATHS_PER_CIRCUIT = 10;

export async function holdCircuit(
  { db, docker, clock, settings }: Pick<HostDeps, 'db' | 'docker' | 'clock' | 'settings'>,
  serviceId: string,
): Promise<HeldCircuit> {
  const c = readCircuit(db, serviceId);
  if (!c?.open) return { open: false, generation: c?.generation ?? 0, retryAt: 0, remainingMs: 0 };
  if (isValidContainerId(c.containerId)) await ignoreNotFound(docker.stopContainer(c.containerId));
  // From here this opening has its timer: the worker's look no longer asks a tick to hand it over.
  recordCircuitHold(db, serviceId, c.generation, unixSeconds(clock));
  const retryAt = c.retryAt ?? unixSeconds(clock);
  const deaths =
    c.windowStart === null
      ? []
      : deathsOfWindow(db, serviceId, c.windowStart, DEATHS_PER_CIRCUIT).map(({ diedAtMs, reason, containerId }) => ({
          diedAtMs,
          reason,
          containerId: containerId.slice(0, 12),
        }));
  return {
    open: true,
    generation: c.generation,
    retryAt,
    remainingMs: Math.max(0, retryAt * 1000 - clock.nowMs()),
    hostId: settings.hostId,
    alerts: settings.notifyWebhooks.length > 0,
    deaths,
  };
}

/** Closes generation `generation` of the circuit; with --recovery restart, starts the kept container first. */
export async function recoverCircuit(
  { db, docker, settings, log, clock }: Pick<HostDeps, 'db' | 'docker' | 'settings' | 'log' | 'clock'>,
  serviceId: string,
  generation: number,
  trigger: Recovery['trigger'],
): Promise<RecoveryResult> {
  const c = readCircuit(db, serviceId);
  if (!c?.open || c.generation !== generation) return { recovered: false };
  const containerId = c.containerId;
  const restart = settings.recovery === 'restart' && isValidContainerId(containerId);
  const started = restart ? await startKept(docker, containerId) : { status: 'stopped' as const };
  const now = unixSeconds(clock);
  const recovered = closeCircuit(db, { serviceId, generation, trigger, ...started }, now);
  if (recovered && started.status === 'running' && containerId) {
    // A start through the API resets RestartCount: later deaths are counted from 0.
    setLook(db, serviceId, { containerId, state: 'running', restartCount: 0, health: '' }, now);
  }
  if (!recovered) return { recovered };
  const result: RecoveryResult = { recovered, status: started.status, ...(started.error ? { error: started.error } : {}) };
  log.info('circuit closed', { serviceId, generation, trigger, status: result.status, ...(result.error ? { error: result.error } : {}) });
  return result;
}

/** Starts the kept container; a container that is gone leaves the service stopped with the reason. */
async function startKept(docker: HostDeps['docker'], containerId: string): Promise<{ status: Recovery['status']; error?: string }> {
  try {
    await docker.startContainer(containerId);
    return { status: 'running' };
  } catch (err) {
    if (!(err instanceof DockerError && err.isNotFound)) throw err; // transient: the activity retries
    return { status: 'stopped', error: 'kept container is gone; redeploy required' };
  }
}

/** Open circuits, and closed ones still escalated: `keeper circuit list`. */
export function circuitList({ db }: Pick<HostDeps, 'db'>): CircuitRow[] {
  return listCircuits(db);
}

/** One service's circuit row, or undefined when there is no such service. */
export function circuitOf({ db }: Pick<HostDeps, 'db'>, serviceId: string): CircuitRow | undefined {
  return readCircuit(db, serviceId);
}
