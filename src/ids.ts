/**
 * Temporal ids of one keeper host: its task queue, its schedules and the ids of the workflows it runs. Workflow
 * code imports this module: it stays deterministic (plain string functions, nothing else).
 */

/**
 * keeper's loops, the one list: each one's name (its schedule `keeper-<host>-<name>`, `keeper schedules <loop>`, the
 * `loop` of logs, metrics and keeper_loop_results), the workflow type its schedule starts, and the other workflow
 * types that are runs of it, by what starts them (`events`: the event watcher's and the looks' requests).
 * src/temporal/schedules.ts checks each type against the workflows the bundle exports.
 */
export const LOOP_LIST = [
  { name: 'reconcile', workflowType: 'reconcileTick', otherRuns: { events: 'reconcileOnEvents' } },
  { name: 'gc', workflowType: 'gcSweep', otherRuns: {} },
  { name: 'pool', workflowType: 'poolRefill', otherRuns: {} },
] as const;

export type LoopName = (typeof LOOP_LIST)[number]['name'];
export const LOOPS: readonly LoopName[] = LOOP_LIST.map((l) => l.name);

/** The workflow types of every loop's runs: what its schedule starts, and its other runs. */
export function loopRunTypes(loop: (typeof LOOP_LIST)[number]): string[] {
  return [loop.workflowType, ...Object.values<string>(loop.otherRuns)];
}

/** The loop whose run a workflow of this type is, or undefined (a circuit, an alert, a health check). */
export function loopOfWorkflowType(type: string): LoopName | undefined {
  return LOOP_LIST.find((l) => loopRunTypes(l).includes(type))?.name;
}

/** One-shot runs an operator starts: `keeper reconcile --once`, `gc --once` / `--dry-run`, `pool refill --once`. */
export type OneShotRun = 'reconcile' | 'gc' | 'gc-dry-run' | 'pool';

/** Every workflow and activity of one host runs on its own queue, so activities touch only that host. */
export function taskQueueFor(hostId: string): string {
  return `keeper-${hostId}`;
}

/** Shared ids of one-shot runs that must not overlap: a second caller joins the running one. */
const SHARED_ONE_SHOT: Record<Exclude<OneShotRun, 'reconcile'>, string> = { gc: 'gc-once', 'gc-dry-run': 'gc-dry-run', pool: 'pool-once' };

export const ids = {
  /** A loop's schedule, and the prefix of the runs it starts (the server appends the scheduled time). */
  schedule: (hostId: string, loop: string) => `keeper-${hostId}-${loop}`,
  /** The reconcileOnEvents run the event watcher and the looks request (a signal, while one runs): a burst is one run. */
  reconcileOnEvents: (hostId: string) => `keeper-${hostId}-reconcile-events`,
  circuit: (hostId: string, serviceId: string) => `keeper-${hostId}-circuit-${serviceId}`,
  health: (hostId: string) => `keeper-${hostId}-health`,
  /** The alert of one circuit opening's event: one workflow (and one delivery per webhook) each. */
  notify: (hostId: string, serviceId: string, opening: number, kind: string) =>
    `keeper-${hostId}-notify-${serviceId}-opening-${opening}-${kind}`,
  /**
   * The same for a circuit run that began before openings were numbered: by its generation (the escalation level,
   * by its old name). Kept so that those runs replay the ids they started their alerts with (compatibility).
   */
  notifyByGeneration: (hostId: string, serviceId: string, generation: number, kind: string) =>
    `keeper-${hostId}-notify-${serviceId}-g${generation}-${kind}`,
  /** A one-shot run; every `reconcile --once` is a tick of its own. */
  once: (hostId: string, run: OneShotRun, nowMs: number) =>
    run === 'reconcile' ? `keeper-${hostId}-reconcile-once-${nowMs}` : `keeper-${hostId}-${SHARED_ONE_SHOT[run]}`,
};
