/**
 * Each loop run's result in an operator's words, pure: the one line a run that acted shows in the Temporal UI
 * (its current details), and what `keeper status` and `keeper pool status` print for the rows of
 * keeper_loop_results, e.g. `ok: 3 services, 0 crashes, 0 circuits opened`, `ok: removed 2 (containers 1,
 * volumes 1)`, `warning: template node image missing; 1 created`. Workflow code uses them, so they live in
 * policy/ rather than cli/; each loop's unit names its own (src/loops/), so a loop without words does not compile.
 * A result starts with its level: ok, warning (keeper carries on, an operator may act) or error (the loop could not
 * do its work). Results recorded by an older keeper may lack fields: each counts as none.
 */
import type { GcClassSummary, GcSweepResult } from '../contracts/gc';
import type { PoolRefillResult } from '../contracts/pool';
import type { TickSummary } from '../contracts/reconcile';
import { refillConditions } from './conditions';

export type ResultLevel = 'ok' | 'warning' | 'error';

/** `1 crash`, `0 crashes`, `2 circuits opened`. */
export function count(n: number, one: string, many = `${one}s`, after = ''): string {
  return `${n} ${n === 1 ? one : many}${after ? ` ${after}` : ''}`;
}

const line = (level: ResultLevel, parts: string[]) => `${level}: ${parts.filter(Boolean).join(', ')}`;
const nonZero = (n: number | undefined, text: (n: number) => string) => (n ? text(n) : '');

/** A reconcile tick: what it checked and counted, then only what happened. */
export function tickWords(t: Partial<TickSummary>): string {
  if (t.dockerReachable === false)
    return line('warning', ['docker unreachable: only the DB steps ran, nothing counted', ...tickHousekeeping(t)]);
  const problems = [
    nonZero(t.transientErrors, (n) => count(n, 'container', 'containers', 'skipped after a transient error')),
    nonZero(t.dockerActionErrors, (n) => count(n, 'docker action', 'docker actions', 'failed, retried next tick')),
    nonZero(t.badInput?.length, (n) => count(n, 'bad row or label', 'bad rows or labels', 'skipped')),
    nonZero(t.splitBrain?.length, (n) => count(n, 'split-brain container')),
  ];
  const level = problems.some(Boolean) ? 'warning' : 'ok';
  return line(level, [
    count(t.checked ?? 0, 'service'),
    count(t.crashes ?? 0, 'crash', 'crashes'),
    count(t.opened ?? 0, 'circuit', 'circuits', 'opened'),
    nonZero(t.circuitsExpired, (n) => count(n, 'circuit', 'circuits', 'due for a retry')),
    nonZero(t.recovered, (n) => count(n, 'service', 'services', 'running again')),
    nonZero(t.unhealthyRestarted, (n) => count(n, 'unhealthy container', 'unhealthy containers', 'restarted')),
    nonZero(t.missing, (n) => count(n, 'service', 'services', 'stopped, container gone')),
    nonZero(t.engineStopsHeld, (n) => count(n, 'engine stop', 'engine stops', 'held')),
    nonZero(t.deathsHeld, (n) => count(n, 'container', 'containers', "with deaths held for the engine's events")),
    nonZero(t.oomConfirmed, (n) => count(n, 'death', 'deaths', 'found to be OOM kills')),
    nonZero(t.databasesUnavailable, (n) => count(n, 'database', 'databases', 'unavailable')),
    nonZero(t.databasesReady, (n) => count(n, 'database', 'databases', 'ready again')),
    nonZero(t.environmentsStopped, (n) => count(n, 'environment', 'environments', 'stopped')),
    ...tickHousekeeping(t),
    ...problems,
  ]);
}

function tickHousekeeping(t: Partial<TickSummary>): string[] {
  return [
    nonZero(t.failedDeploys, (n) => count(n, 'stale deploy', 'stale deploys', 'failed')),
    nonZero(t.failedEnvCreates, (n) => count(n, 'stale environment create', 'stale environment creates', 'failed')),
    nonZero(t.expiredLeases, (n) => count(n, 'lease', 'leases', 'expired')),
  ];
}

/** A GC sweep: what it removed, by class; what failed or could not be swept. */
export function gcWords(r: Partial<GcSweepResult>): string {
  const summary: Partial<GcClassSummary>[] = r.summary ?? [];
  const sum = (k: 'removed' | 'failed' | 'skipped') => summary.reduce((n, c) => n + (c[k] ?? 0), 0);
  const removed = sum('removed');
  const byClass = summary
    .filter((c) => c.removed)
    .map((c) => `${c.class} ${c.removed}`)
    .join(', ');
  const unswept = summary.filter((c) => c.error);
  const problems = [
    nonZero(sum('failed'), (n) => `${n} failed, kept for the next sweep`),
    nonZero(sum('skipped'), (n) => `${n} skipped, could not be read`),
    ...unswept.map((c) => `${c.class} not swept: ${c.error}`),
  ];
  const level = unswept.length > 0 ? 'error' : problems.some(Boolean) ? 'warning' : 'ok';
  return line(level, [removed ? `removed ${removed} (${byClass})` : 'nothing to remove', ...problems]);
}

/** A pool refill: its conditions (a missing image, the disk guard) first, then what it made and fixed. */
export function refillWords(r: PoolRefillResult): string {
  const conditions = refillConditions(r).map((c) => c.summary);
  const made = (r.created ?? []).filter((c) => c.outcome === 'created').length;
  const failed = r.failed ?? [];
  const parts = [
    ...conditions,
    r.blocked ? '' : `${made} created`,
    nonZero(r.prune?.pruned.length, (n) => count(n, 'ghost', 'ghosts', 'pruned')),
    nonZero(r.prune?.replaced?.length, (n) => `${n} of another runtime replaced (${r.prune.replaced![0].runtime})`),
    nonZero(r.prune?.kept.length, (n) => `${n} kept after a transient error`),
    nonZero(r.detach?.detached.length, (n) => `${count(n, 'claimed container', 'claimed containers')} detached from ah-pool`),
    nonZero(r.detach?.failed.length, (n) => `${n} not detached: ${r.detach!.failed[0].error}`),
    r.detach?.error ? `ah-pool not read: ${r.detach.error}` : '',
    nonZero(failed.length, (n) => `${n} not created: ${failed[0].error}`),
  ];
  const level = failed.length > 0 || r.detach?.error ? 'error' : conditions.length > 0 || r.prune?.kept.length ? 'warning' : 'ok';
  return line(level, parts);
}
