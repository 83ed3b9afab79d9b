/**
 * The reconcile loop's look: what a tick would do now, found without a tick. It runs the tick's own
 * observation (src/host/reconcile/observe.ts: the round's one container list, an inspect only of containers that
 * may have changed, the engine's events only when one died) and reads the rows the tick's DB-only steps would
 * change. Like the tick's observation it writes only bookkeeping of keeper's container snapshots: those it confirmed
 * unchanged move their time forward, and a snapshot that changed with nothing to count (a health check that passed, a
 * first snapshot's baseline) is swapped by the same compare-and-set a tick uses. Everything else is left to the tick it
 * requests. An engine that did not answer (or some reads that failed) makes the look fail, with the engine's line.
 */
import { whenWritable } from '../../db/busy';
import { unheldCircuits } from '../../db/circuit-holds';
import { environmentsDue, problemReported } from '../../db/hosted';
import { swapSnapshot } from '../../db/container-snapshots';
import { expiredCircuits, servicesDue } from '../../db/services';
import type { CircuitRef, CrashPolicy, TickObservation } from '../../contracts/reconcile';
import { crashPolicy } from '../../policy/deaths/decision';
import { unixSeconds } from '../../time';
import type { HostDeps } from '../deps';
import { EngineView } from '../../watch/engine-view';
import { itemsOf, type Finding, type FoundItem } from '../../watch/finding';
import { observeHost } from './observe';

/** An expired circuit's own workflow recovers it at its retry time; one still open this much later has lost it. */
export const EXPIRED_CIRCUIT_GRACE_SEC = 60;

type LookDeps = Pick<HostDeps, 'db' | 'docker' | 'settings' | 'clock'>;

export async function lookForReconcile(
  deps: LookDeps,
  policy: CrashPolicy = crashPolicy(deps.settings),
  view: EngineView = new EngineView(deps.docker),
): Promise<Finding> {
  const now = unixSeconds(deps.clock);
  const rows = rowsDue(deps, policy, now);
  const obs = await observeHost(deps, policy, now, view);
  await whenWritable('the snapshots swapped', () => {
    for (const l of obs.looks) swapSnapshot(deps.db, l.serviceId, l.expected, l.next, now); // compare-and-set: safe again
  });
  const seen = observed(deps, obs);
  return { items: [...seen.items, ...rows.items], serviceId: seen.serviceId ?? rows.serviceId, ...unseen(obs) };
}

/**
 * What the observation could not see, as a look's failure: the engine's list (the look then saw only the DB's rows,
 * which it still requests), or some of its reads. A look that saw nothing of the engine has not found "no crash".
 */
function unseen(obs: TickObservation): Pick<Finding, 'failed'> {
  if (obs.dockerError !== undefined) return { failed: obs.dockerError };
  if (obs.transientErrors > 0 || obs.transientSamples.length > 0) {
    return { failed: `${Math.max(obs.transientErrors, 1)} engine read(s) failed: ${obs.transientSamples[0] ?? ''}` };
  }
  return {};
}

/** What the tick's DB-only steps and its circuit hand-over would do now. */
function rowsDue({ db, settings }: LookDeps, policy: CrashPolicy, now: number): Finding {
  const services = servicesDue(db, now, { staleDeployAfterSec: settings.staleDeployAfterMs / 1000, decaySec: policy.decaySec });
  const envs = environmentsDue(db, now, settings.staleEnvCreateAfterMs / 1000);
  const unheld = unheldCircuits(db);
  const lost = expiredCircuits(db, now - EXPIRED_CIRCUIT_GRACE_SEC);
  return {
    items: itemsOf([
      ...services.deploys.map((id) => `stale-deploy:${id}`),
      ...envs.leases.map((id) => `lease-expired:${id}`),
      ...envs.creates.map((id) => `stale-create:${id}`),
      ...unheld.map((c) => `circuit-unheld:${c.serviceId}@${openingItem(c)}`),
      ...lost.map((c) => `circuit-expired:${c.serviceId}@${openingItem(c)}`),
    ]),
    serviceId: unheld[0]?.serviceId ?? lost[0]?.serviceId ?? services.deploys[0],
  };
}

/** Which opening an item is about: its number, or `unnumbered` for one the tick's hand-over has yet to number. */
const openingItem = (c: CircuitRef) => (c.opening === undefined ? 'unnumbered' : `opening${c.opening}`);

/** What the tick's apply step would do with this observation (bad input it has not reported yet included). */
function observed({ db }: LookDeps, obs: TickObservation): Finding {
  const crashes = obs.crashes.map((c): FoundItem => {
    const key = `crash:${c.serviceId}@${c.nextLook.state}/${c.nextLook.restartCount}`;
    // Only a death the engine told of (its die event, or the dead run's own times) is one the stream owed an event;
    // a container that is gone, or a death whose time is only estimated, says nothing of the stream.
    const told = (c.facts ?? []).filter((f) => f.seenBy !== 'missing' && f.datedBy !== 'spread');
    const latest = Math.max(...told.map((f) => f.diedAtMs ?? -1));
    return latest > 0 ? { key, change: { containerId: c.containerId, atMs: latest } } : { key };
  });
  // A service coming back up: the event watcher's request after its container's start covers it while pending.
  const backUp = obs.backUp.map((b): FoundItem => ({ key: `back-up:${b.serviceId}`, coveredByStartRequest: true }));
  const keys = [
    ...obs.gone.map((g) => `gone:${g.serviceId}`),
    ...(obs.vanished ?? []).map((v) => `vanished:${v.serviceId}`),
    ...(obs.openCircuitsRunning ?? []).map((c) => `circuit-running:${c.serviceId}`),
    ...(obs.oomConfirmed ?? []).map((id) => `oom-confirmed:${id}`),
    ...obs.databases.map((d) => `database:${d.id}@${d.to}`),
    ...obs.environmentsDown.map((e) => `environment-down:${e.id}`),
    ...obs.environmentStops.map((e) => `environment-stop:${e.id}`),
    ...obs.splitBrain
      .filter((s) => !problemReported(db, `container:${s.containerId}`, 'split-brain'))
      .map((s) => `split-brain:${s.containerId}`),
    ...obs.problems.filter((p) => !problemReported(db, p.subject, p.problem)).map((p) => `bad-input:${p.subject}`),
  ];
  const serviceId =
    obs.crashes[0]?.serviceId ?? obs.backUp[0]?.serviceId ?? obs.gone[0]?.serviceId ?? obs.openCircuitsRunning?.[0]?.serviceId;
  return { items: [...crashes, ...backUp, ...itemsOf(keys)], serviceId };
}
