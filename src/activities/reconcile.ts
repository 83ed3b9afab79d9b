/**
 * Activities of the reconcile tick. `housekeep` runs the DB-only steps (they run even when Docker is down),
 * `observeHost` looks (it writes nothing), `applyObservation` acts on what changed with compare-and-set
 * writes, so any of them can be retried harmlessly. Each returns a compact result.
 */
import { DockerError } from '../docker/client';
import { expireLeases, failStaleEnvironmentCreates, reportProblemOnce, setDatabaseStatus, stopEnvironment } from '../db/hosted';
import { pruneLooks, swapLook } from '../db/looks';
import { recordLoopResult } from '../db/loop-results';
import {
  decayEscalations, expiredCircuits, failStaleDeploys, markServiceRunning, markServiceStopped, readCircuit, recordCrash,
  type CircuitRef,
} from '../db/services';
import { createLogger, type Logger } from '../log';
import { crashPolicy } from '../policy/crash';
import { observeHost, type TickObservation } from './reconcile-observe';
import type { ActivityDeps } from './deps';

export type { TickObservation } from './reconcile-observe';

export interface Housekeeping {
  /** This worker's host: the tick names circuit workflows with it (recorded, so replay sees the same). */
  hostId: string;
  failedDeploys: number;
  failedEnvCreates: number;
  expiredLeases: number;
  decayed: number;
  expiredCircuits: CircuitRef[];
}

export interface TickApplied {
  crashes: number; // deaths counted
  crashedServices: number;
  opened: CircuitRef[];
  unhealthyRestarted: number;
  recovered: number; // crashed services whose container runs again
  missing: number; // crashed services whose container is gone → stopped
  databasesUnavailable: number;
  databasesReady: number;
  environmentsStopped: number;
  containersStopped: number;
  dockerActionErrors: number;
}

export interface TickSummary extends Omit<TickApplied, 'opened'>, Omit<Housekeeping, 'expiredCircuits' | 'hostId'> {
  dockerReachable: boolean;
  checked: number;
  inspected: number;
  transientErrors: number;
  opened: number;
  circuitsExpired: number;
  splitBrain: { containerId: string; serviceId: string; dbContainerId: string }[];
  badInput: { subject: string; problem: string }[];
}

const nowSec = () => Math.floor(Date.now() / 1000);

export function createReconcileActivities({ db, docker, settings, metrics }: ActivityDeps) {
  const log = createLogger(settings.logFormat, { host: settings.hostId, loop: 'reconcile' });
  const policy = crashPolicy(settings);
  return {
    /** The DB-only steps: stale deploys and environment creates, lease expiry, escalation decay, expired circuits. */
    async housekeep(): Promise<Housekeeping> {
      const now = nowSec();
      const result = {
        hostId: settings.hostId,
        failedDeploys: failStaleDeploys(db, now, settings.staleDeployAfterMs / 1000),
        failedEnvCreates: failStaleEnvironmentCreates(db, now, settings.staleEnvCreateAfterMs / 1000),
        expiredLeases: expireLeases(db, now),
        decayed: decayEscalations(db, now, policy.decaySec),
        expiredCircuits: expiredCircuits(db, now),
      };
      pruneLooks(db);
      return result;
    },

    async observeHost(): Promise<TickObservation> {
      const obs = await observeHost(db, docker, policy, nowSec());
      if (obs.dockerError) log.warn('docker unreachable: only DB steps ran, nothing counted', { error: obs.dockerError });
      if (obs.transientErrors) log.warn('transient docker errors: those containers were skipped', { count: obs.transientErrors, first: obs.transientSamples });
      return obs;
    },

    async applyObservation(obs: TickObservation): Promise<TickApplied> {
      return applyObservation(obs, { db, docker, log, policy, metrics });
    },

    async recordTickResult(summary: TickSummary, workflowId: string): Promise<void> {
      recordLoopResult(db, { loop: 'reconcile', hostId: settings.hostId, workflowId, finishedAt: nowSec(), result: summary });
    },
  };
}

interface ApplyDeps extends Pick<ActivityDeps, 'db' | 'docker' | 'metrics'> {
  log: Logger;
  policy: ReturnType<typeof crashPolicy>;
}

async function applyObservation(obs: TickObservation, { db, docker, log, policy, metrics }: ApplyDeps): Promise<TickApplied> {
  const now = nowSec();
  const r: TickApplied = {
    crashes: 0, crashedServices: 0, opened: [], unhealthyRestarted: 0, recovered: 0, missing: 0, databasesUnavailable: 0,
    databasesReady: 0, environmentsStopped: 0, containersStopped: 0, dockerActionErrors: 0,
  };
  const dockerAction = async (what: string, fn: () => Promise<void>) => {
    try {
      await fn();
      return true;
    } catch (err) {
      if (!(err instanceof DockerError)) throw err;
      if (err.isNotFound) return true;
      r.dockerActionErrors++;
      log.warn(`${what} failed; retried later`, { error: err.message });
      return false;
    }
  };

  for (const c of obs.crashes) {
    const outcome = recordCrash(db, c, now, policy);
    if (outcome.counted > 0) {
      r.crashes += outcome.counted;
      r.crashedServices++;
      metrics?.crashes.add(outcome.counted, { service_id: c.serviceId });
      log.info('service crashed', { serviceId: c.serviceId, deaths: outcome.counted, crashCount: outcome.crashCount, reason: c.reason });
    }
    // A retry finds the crash already counted; an open circuit on this container still needs its stop and its workflow.
    const circuit = outcome.opened ?? openCircuitOn(db, c.serviceId, c.containerId);
    if (circuit) {
      r.opened.push(circuit);
      if (outcome.opened) log.warn('circuit opened: container stopped and kept', { serviceId: c.serviceId, generation: circuit.generation, retryAt: circuit.retryAt });
      await dockerAction(`stop ${c.containerId.slice(0, 12)}`, () => docker.stopContainer(c.containerId));
    } else if (c.restart && outcome.counted > 0) {
      // The seed stops an unhealthy container, but Docker does not restart a container stopped through its API (W-4).
      if (await dockerAction(`restart ${c.containerId.slice(0, 12)}`, () => docker.restartContainer(c.containerId))) r.unhealthyRestarted++;
    }
  }
  for (const l of obs.looks) swapLook(db, l.serviceId, l.expected, l.next, now);
  for (const b of obs.backUp) if (markServiceRunning(db, b.serviceId, b.containerId, now)) r.recovered++;
  for (const g of obs.gone) if (markServiceStopped(db, g.serviceId, g.containerId, now, 'container not found by reconciler')) r.missing++;
  for (const d of obs.databases) {
    if (!setDatabaseStatus(db, d.id, d.from, d.to, now)) continue;
    if (d.to === 'ready') r.databasesReady++;
    else r.databasesUnavailable++;
    log.info(`database ${d.to}`, { databaseId: d.id });
  }
  for (const e of obs.environmentsDown) {
    if (stopEnvironment(db, e.id, now)) (r.environmentsStopped++, log.info('environment stopped', { environmentId: e.id, reason: e.reason }));
  }
  for (const e of obs.environmentStops) {
    if (await dockerAction(`stop environment ${e.id}`, () => docker.stopContainer(e.containerId))) r.containersStopped++;
  }
  for (const s of obs.splitBrain) {
    if (reportProblemOnce(db, `container:${s.containerId}`, 'split-brain', now)) {
      log.warn('split-brain: container claims a service the DB does not give it; not repaired (labels can be spoofed)', s);
    }
  }
  for (const p of obs.problems) {
    if (reportProblemOnce(db, p.subject, p.problem, now)) log.warn('bad input skipped', { subject: p.subject, problem: p.problem });
  }
  return r;
}

function openCircuitOn(db: ApplyDeps['db'], serviceId: string, containerId: string): CircuitRef | undefined {
  const c = readCircuit(db, serviceId);
  if (!c?.open || c.containerId !== containerId || c.retryAt === null) return undefined;
  return { serviceId, generation: c.generation, retryAt: c.retryAt };
}
