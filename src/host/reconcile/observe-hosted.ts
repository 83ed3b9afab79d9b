/**
 * The tick's look at databases and environments (ah's own rules for them, with W-2, W-15 and W-16 of
 * docs/ah-differences.md fixed): a database follows its container between `ready` and `unavailable`; a running
 * environment whose container died or vanished is stopped; an expired lease stops its container once.
 */
import type { LimitFunction } from 'p-limit';
import { readDatabases, readEnvironments, type HostedRow } from '../../db/hosted';
import type { StateDb } from '../../db/open';
import { isDown } from '../../policy/deaths/shown';
import { isValidContainerId } from '../../policy/rows';
import type { Inspector, Listed } from './inspector';
import type { TickObservation } from '../../contracts/reconcile';

export async function observeDatabases(
  db: StateDb,
  listed: Listed,
  inspector: Inspector,
  limit: LimitFunction,
  obs: TickObservation,
): Promise<void> {
  await Promise.all(readDatabases(db).map((d) => limit(() => observeDatabase(d, listed, inspector, obs))));
}

export async function observeEnvironments(
  db: StateDb,
  listed: Listed,
  inspector: Inspector,
  limit: LimitFunction,
  obs: TickObservation,
): Promise<void> {
  await Promise.all(readEnvironments(db).map((e) => limit(() => observeEnvironment(e, listed, inspector, obs))));
}

async function observeDatabase(d: HostedRow, listed: Listed, inspector: Inspector, obs: TickObservation): Promise<void> {
  if (!isValidContainerId(d.containerId)) {
    if (d.status === 'ready') obs.problems.push({ subject: `database:${d.id}`, problem: 'ready with a missing or malformed container_id' });
    return;
  }
  obs.checked++;
  const state = await containerState(d.containerId, listed, inspector, `database ${d.id}`);
  if (state === 'transient') return;
  if (d.status === 'ready' && (state === 'missing' || isDown(state))) obs.databases.push({ id: d.id, from: 'ready', to: 'unavailable' });
  if (d.status === 'unavailable' && state === 'running') obs.databases.push({ id: d.id, from: 'unavailable', to: 'ready' });
}

async function observeEnvironment(e: HostedRow, listed: Listed, inspector: Inspector, obs: TickObservation): Promise<void> {
  if (!isValidContainerId(e.containerId)) {
    if (e.status === 'running')
      obs.problems.push({ subject: `environment:${e.id}`, problem: 'running with a missing or malformed container_id' });
    return;
  }
  obs.checked++;
  if (e.status === 'stopped') {
    // A lease that expired stops its container once: only while the list still shows it running.
    const c = listed.find(e.containerId);
    if (c?.state === 'running' && e.leaseExpiresAt !== null && e.leaseExpiresAt < obs.now)
      obs.environmentStops.push({ id: e.id, containerId: c.id });
    return;
  }
  const state = await containerState(e.containerId, listed, inspector, `environment ${e.id}`);
  if (state === 'missing') obs.environmentsDown.push({ id: e.id, reason: 'container not found' });
  else if (state !== 'transient' && isDown(state)) obs.environmentsDown.push({ id: e.id, reason: `container ${state}` });
}

/** The list's state when it has the container; otherwise an inspect decides between missing and transient. */
async function containerState(containerId: string, listed: Listed, inspector: Inspector, what: string): Promise<string> {
  const listedContainer = listed.find(containerId);
  if (listedContainer) return listedContainer.state;
  const details = await inspector.inspect(containerId, what);
  return typeof details === 'string' ? details : details.status;
}
