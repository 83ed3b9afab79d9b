/**
 * The tick's DB-only steps. They run even when Docker is unreachable (W-10 in docs/ah-differences.md): stale
 * deploys and environment creates fail, expired leases stop, escalation decays, and expired circuits are found
 * so the tick can hand them to their circuit workflows.
 */
import { expireLeases, failStaleEnvironmentCreates } from '../../db/hosted';
import { pruneSnapshots } from '../../db/container-snapshots';
import { decayEscalations, expiredCircuits, failStaleDeploys } from '../../db/services';
import type { CrashPolicy, Housekeeping } from '../../contracts/reconcile';
import { unixSeconds } from '../../time';
import type { HostDeps } from '../deps';
import { reportOtherWriter } from '../other-writer';

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
  pruneSnapshots(db);
  // ah's reconciler left running beside keeper counts every death a second time: say so, once per change.
  reportOtherWriter(deps);
  return result;
}
