/**
 * How a loop's run ends on its host: its result recorded as the loop's last (keeper_loop_results, for `keeper
 * status`), and what that result adds to the metrics (src/metrics.ts decides it, per loop). The write waits for
 * another writer's lock awaited (src/db/busy.ts).
 */
import { whenWritable } from '../db/busy';
import { recordLoopResult } from '../db/loop-results';
import type { HostDeps } from '../host/deps';
import type { LoopName } from '../ids';
import { recordLoopMetrics } from '../metrics';
import { unixSeconds } from '../time';

export async function recordLoopRun(
  deps: Pick<HostDeps, 'db' | 'settings' | 'clock' | 'metrics'>,
  loop: LoopName,
  workflowId: string,
  result: unknown,
): Promise<void> {
  const row = { loop, hostId: deps.settings.hostId, workflowId, finishedAt: unixSeconds(deps.clock), result };
  await whenWritable(`the ${loop} loop's result`, () => recordLoopResult(deps.db, row));
  if (deps.metrics) recordLoopMetrics(deps.metrics, deps.db, loop, result);
}
