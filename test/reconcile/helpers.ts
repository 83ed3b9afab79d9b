/** Running ticks and activities for reconcile tests; row and container helpers live in rows.ts. */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createActivities } from '../../src/loops/registry';
import type { HostParts } from '../../src/app/open';
import type { Settings } from '../../src/settings';
import type { TickSummary } from '../../src/contracts/reconcile';
import { taskQueueFor } from '../../src/ids';
import { reconcileTick } from '../../src/workflows';
import { keeperWorker } from '../helpers/temporal';
import { testDeps, uniqueId } from '../helpers/fixtures';

type TickHost = HostParts & Required<Pick<HostParts, 'db' | 'docker'>> & { settings: Settings };

export * from './rows';

/** One reconcile tick as a workflow on this env, with a worker for `deps`. */
export async function runTick(env: TestWorkflowEnvironment, deps: TickHost, workflowId = uniqueId('tick-')): Promise<TickSummary> {
  const worker = await keeperWorker(env, deps);
  return worker.runUntil(env.client.workflow.execute(reconcileTick, { taskQueue: taskQueueFor(deps.settings.hostId), workflowId }));
}

/** The activities in-process, for steps tested without a workflow (e.g. applying one observation twice). */
export function activities(deps: TickHost) {
  return createActivities(testDeps(deps));
}
