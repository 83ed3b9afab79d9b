/**
 * The pool loop's look: whether a refill would do anything now. Its ready rows against the engine's
 * warm-pool containers (from the round's one container list, src/watch/engine-view.ts: a row whose container is
 * gone or dead), the refill's own plan without starting any pull (a template short of --pool-size, whose image the
 * engine has), and claimed containers still on `ah-pool` (one network inspect). Nothing while the disk guard holds
 * the pool: the disk watcher clears the hold once every path is under --disk-warn, and the next look then finds the
 * pool short. Reads only.
 */
import { containersHeldByEnvironments } from '../../db/environments';
import { poolRows } from '../../db/pool';
import { isNotFound } from '../../docker/errors';
import { LABEL, POOL_NETWORK, RESOURCE_TYPE } from '../../names';
import { statusAgeLowerBound } from '../../policy/container-status';
import { isDeadPoolContainer } from '../../policy/pool';
import { EngineView } from '../../watch/engine-view';
import { itemsOf, NOTHING_FOUND, type Finding } from '../../watch/finding';
import type { HostDeps } from '../deps';
import { isPoolHeld } from '../disk';
import { planPoolRefill } from './refill';

type LookDeps = Pick<HostDeps, 'db' | 'docker' | 'settings' | 'clock'>;

export async function lookForPool(deps: LookDeps, view: EngineView = new EngineView(deps.docker)): Promise<Finding> {
  if (isPoolHeld(deps)) return NOTHING_FOUND;
  const keys = [...(await unusableReady(deps, view)), ...(await shortTemplates(deps)), ...(await claimedOnPool(deps))];
  return { items: itemsOf(keys) };
}

/** Ready rows a claim could be handed but should not: their container is gone, or down for good. */
async function unusableReady({ db, clock }: LookDeps, view: EngineView): Promise<string[]> {
  const rows = poolRows(db, 'ready');
  if (rows.length === 0) return [];
  const listed = new Map((await view.labelled({ [LABEL.type]: RESOURCE_TYPE.warmPool })).map((c) => [c.id, c]));
  const items: string[] = [];
  for (const row of rows) {
    const c = listed.get(row.containerId) ?? [...listed.values()].find((l) => l.id.startsWith(row.containerId));
    if (!c) items.push(`pool-gone:${row.id}`);
    else if (isDeadPoolContainer(c.state, finishedAtMs(c.status, clock.nowMs()), clock.nowMs())) items.push(`pool-dead:${row.id}`);
  }
  return items;
}

/** The list has no finish time, but its status text says how long ago (`Exited (0) 20 seconds ago`), at least. */
function finishedAtMs(status: string, nowMs: number): number | null {
  const ageSec = statusAgeLowerBound(status);
  return ageSec === null ? null : nowMs - ageSec * 1000;
}

/** Templates the refill would create containers for now (their image is on the engine). */
async function shortTemplates(deps: LookDeps): Promise<string[]> {
  const plan = await planPoolRefill(deps);
  return plan.steps.filter((s) => s.count > 0).map((s) => `pool-short:${s.templateId}@${plan.ready[s.templateId] ?? 0}`);
}

/** Claimed containers still on the pool's network: a refill takes them off. */
async function claimedOnPool({ db, docker }: LookDeps): Promise<string[]> {
  try {
    const net = await docker.inspectNetwork(POOL_NETWORK);
    return containersHeldByEnvironments(
      db,
      net.containers.map((c) => c.id),
    ).map((id) => `pool-detach:${id.slice(0, 12)}`);
  } catch (err) {
    if (isNotFound(err)) return [];
    throw err;
  }
}
