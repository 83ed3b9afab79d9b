/** Running ticks and activities for reconcile tests; row and container helpers live in rows.ts. */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createActivities, type ActivityDeps } from '../../src/activities';
import type { TickSummary } from '../../src/activities/reconcile';
import { taskQueueFor } from '../../src/shared';
import { reconcileTick } from '../../src/workflows';
import { keeperWorker } from '../helpers/temporal';
import { uniqueId } from '../helpers/fixtures';

export * from './rows';

/** One reconcile tick as a workflow on this env, with a worker for `deps`. */
export async function runTick(env: TestWorkflowEnvironment, deps: ActivityDeps, workflowId = uniqueId('tick-')): Promise<TickSummary> {
  const worker = await keeperWorker(env, deps);
  return worker.runUntil(env.client.workflow.execute(reconcileTick, { taskQueue: taskQueueFor(deps.settings.hostId), workflowId }));
}

/** The activities in-process, for steps tested without a workflow (e.g. applying one observation twice). */
export function activities(deps: ActivityDeps) {
  return createActivities(deps);
}
