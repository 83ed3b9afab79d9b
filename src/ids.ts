/**
 * Temporal ids of one keeper host: its task queue, its schedules and the ids of the workflows it runs. Workflow
 * code imports this module: it stays deterministic (plain string functions, nothing else).
 */

/** One-shot runs an operator starts: `keeper reconcile --once`, `gc --once` / `--dry-run`, `pool refill --once`. */
export type OneShotRun = 'reconcile' | 'gc' | 'gc-dry-run' | 'pool';

/** Every workflow and activity of one host runs on its own queue, so activities touch only that host. */
export function taskQueueFor(hostId: string): string {
  return `keeper-${hostId}`;
}

/** Shared ids of one-shot runs that must not overlap: a second caller joins the running one. */
const SHARED_ONE_SHOT: Record<Exclude<OneShotRun, 'reconcile'>, string> = { gc: 'gc-once', 'gc-dry-run': 'gc-dry-run', pool: 'pool-once' };

export const ids = {
  /** A loop's schedule (its name: src/loops/), and the prefix of the runs it starts (the server appends the scheduled time). */
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
