/**
 * The tick's DB-only steps. They run even when Docker is unreachable (W-10 in docs/ah-differences.md): stale
 * deploys and environment creates fail, expired leases stop, escalation decays, and expired circuits are found
 * so the tick can hand them to their circuit workflows.
 */
import { expireLeases, failStaleEnvironmentCreates } from '../../db/hosted';
import { pruneLooks } from '../../db/looks';
import { decayEscalations, expiredCircuits, failStaleDeploys, type CircuitRef } from '../../db/services';
import type { CrashPolicy } from '../../policy/crash';
import { unixSeconds } from '../../time';
import type { HostDeps } from '../deps';
import { reportOtherWriter } from '../other-writer';

export interface Housekeeping {
  /** This worker's host: the tick names circuit workflows with it (recorded, so replay sees the same). */
  hostId: string;
  failedDeploys: number;
  failedEnvCreates: number;
  expiredLeases: number;
  decayed: number;
  expiredCircuits: CircuitRef[];
}

export function housekeep(deps: Pick<HostDeps, 'db' | 'settings' | 'clock' | 'log'>, policy: CrashPolicy): Housekeeping {
  const { db, settings, clock } = deps;
  const now = unixSeconds(clock);
  const result = {
    hostId: settings.hostId,
    failedDeploys: failStaleDeploys(db, now, settings.staleDeployAfterMs / 1000),
    failedEnvCreates: failStaleEnvironmentCreates(db, now, settings.staleEnvCreateAfterMs / 1000),
    expiredLeases: expireLeases(db, now),
    decayed: decayEscalations(db, now, policy.decaySec),
    expiredCircuits: expiredCircuits(db, now),
  };
  pruneLooks(db);
  // ah's reconciler left running beside keeper counts every death a second time: say so, once per change.
  reportOtherWriter(deps);
  return result;
}
