/**
 * How a loop's run ends on its host: its result recorded as the loop's last (keeper_loop_results, for `keeper
 * status`), and what that result adds to the metrics (the loop's unit declares it, src/loops/). The write waits for
 * another writer's lock awaited (src/db/busy.ts).
 */
import { whenWritable } from '../db/busy';
import { recordLoopResult } from '../db/loop-results';
import type { StateDb } from '../db/open';
import type { HostDeps } from '../host/deps';
import type { KeeperMetrics } from '../metrics';
import { unixSeconds } from '../time';

/** Keeps a run's result as its loop's last, and applies what it adds to the metrics. */
export type RecordRun = (workflowId: string, result: unknown) => Promise<void>;

/** What a loop's recorded result adds to the metrics. */
export type ResultMetrics = (metrics: KeeperMetrics, db: StateDb, result: unknown) => void;

export async function recordLoopRun(
  deps: Pick<HostDeps, 'db' | 'settings' | 'clock' | 'metrics'>,
  loop: string,
  workflowId: string,
  result: unknown,
  addsToMetrics?: ResultMetrics,
): Promise<void> {
  const row = { loop, hostId: deps.settings.hostId, workflowId, finishedAt: unixSeconds(deps.clock), result };
  await whenWritable(`the ${loop} loop's result`, () => recordLoopResult(deps.db, row));
  if (deps.metrics && addsToMetrics) addsToMetrics(deps.metrics, deps.db, result);
}

/** A loop's activities' way to record a run when they are given none: the result alone, nothing for the metrics. */
export const resultOnly =
  (deps: Pick<HostDeps, 'db' | 'settings' | 'clock'>, loop: string): RecordRun =>
  (workflowId, result) =>
    recordLoopRun(deps, loop, workflowId, result);
