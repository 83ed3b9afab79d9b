/**
 * Every way keeper starts or signals its own workflows, in one typed module: a request for a run of a loop now
 * (through its schedule, or a reconcileOnEvents run by signal-with-start), a one-shot run of a workflow, a circuit's
 * reset. The worker,
 * the one-shot commands and the CLI call these with a client the composition root (src/app/) made; none of them
 * spells a workflow id, a signal or a search attribute itself.
 */
import {
  isGrpcServiceError,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type Client,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { NamespaceNotFoundError, WorkflowNotFoundError, type Workflow, type WorkflowResultType } from '@temporalio/common';
import type { CircuitState } from '../contracts/circuit';
import { ids, taskQueueFor } from '../ids';
import { hostAttributes, serviceAttributes } from '../search-attributes';
import { circuitBreaker } from '../workflows/circuitBreaker';
import { circuitResetSignal, moreEventsSignal } from '../workflows/messages';
import { reconcileOnEvents } from '../workflows/reconcileOnEvents';
import { firstLine } from '../text';

/**
 * Requests one run of `loop` now through the host's schedule (Temporal's trigger), so the schedule stays the one
 * thing that starts runs (same workflow id prefix, search attributes and timeout). BUFFER_ONE, not the schedule's
 * SKIP: a request during a running run is never dropped; it yields exactly one follow-up run, which sees whatever
 * happened during the first. With `unlessPaused`, a paused schedule is left alone (a trigger would run even on a
 * paused one): keeper's own requests must respect an operator's pause; the operator's own do not. False: declined
 * (paused).
 */
export async function requestRun(client: Client, hostId: string, loop: string, opts: { unlessPaused?: boolean } = {}): Promise<boolean> {
  const handle = client.schedule.getHandle(ids.schedule(hostId, loop));
  if (opts.unlessPaused && (await handle.describe()).state.paused) return false;
  await handle.trigger(ScheduleOverlapPolicy.BUFFER_ONE);
  return true;
}

/**
 * A request for a tick (the event watcher's, a local look's): signal-with-start of the host's reconcileOnEvents run,
 * not a schedule trigger, so it costs one start (or one signal into the run already going, which then makes one more
 * pass) instead of a schedule patch and a run with the schedule's own timer, memo and markers. The run carries the
 * service that requested it, so the UI finds it by host and service. A paused reconcile schedule is left alone: an
 * operator's pause covers the events and the looks too.
 */
export async function requestReconcile(client: Client, hostId: string, serviceId?: string, why = 'docker events'): Promise<boolean> {
  if ((await client.schedule.getHandle(ids.schedule(hostId, 'reconcile')).describe()).state.paused) return false;
  await client.workflow.signalWithStart(reconcileOnEvents, {
    workflowId: ids.reconcileOnEvents(hostId),
    taskQueue: taskQueueFor(hostId),
    signal: moreEventsSignal,
    signalArgs: [],
    workflowExecutionTimeout: '10 minutes',
    typedSearchAttributes: serviceId ? serviceAttributes(hostId, serviceId) : hostAttributes(hostId),
    staticSummary: `reconcile tick for ${why}${serviceId ? ` of ${serviceId}` : ''}`,
  });
  return true;
}

/**
 * A refill now, best effort (after a claim, or when a template image's background pull ended or its next try is
 * due): unless the pool schedule is paused. Returns what happened, in words; a failure only means the next refill
 * does it.
 */
export async function requestPoolRefill(client: Client, hostId: string): Promise<string> {
  try {
    return (await requestRun(client, hostId, 'pool', { unlessPaused: true })) ? 'requested' : 'not requested: the pool schedule is paused';
  } catch (err) {
    const e = err as Error;
    return `not requested (${firstLine(e.message) || e.name}); the next pool run refills`;
  }
}

/**
 * gRPC statuses that no retry of the same request can change: what it names is not there (NOT_FOUND: a deleted
 * schedule, an unknown namespace), it is malformed (INVALID_ARGUMENT), or keeper may not do it (PERMISSION_DENIED,
 * UNAUTHENTICATED, UNIMPLEMENTED). Anything else (UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, a connection
 * that failed) may pass by itself.
 */
const PERMANENT_GRPC_CODES = new Set([3, 5, 7, 12, 16]);

/** Whether Temporal refused a request for good (an operator must act), as opposed to not taking it this time. */
export function isPermanentRefusal(err: unknown): boolean {
  if (err instanceof ScheduleNotFoundError || err instanceof WorkflowNotFoundError || err instanceof NamespaceNotFoundError) return true;
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (isGrpcServiceError(e)) return PERMANENT_GRPC_CODES.has(e.code);
  }
  return false;
}

/** Starts `workflow` as this host's one-shot run `workflowId` (joining it if it runs) and waits for its result. */
export function executeOnHostQueue<W extends Workflow>(
  client: Client,
  hostId: string,
  workflow: W,
  workflowId: string,
  args: Parameters<W>,
): Promise<WorkflowResultType<W>> {
  return client.workflow.execute(workflow, {
    taskQueue: taskQueueFor(hostId),
    workflowId,
    args,
    workflowIdConflictPolicy: 'USE_EXISTING',
    typedSearchAttributes: hostAttributes(hostId),
  } as unknown as WorkflowStartOptions<W>);
}

/**
 * Closes a circuit now: signal-with-start of its workflow, so it works whether or not one is running (a circuit
 * that no workflow holds gets one, which recovers it at once). Resolves with the workflow's end state.
 */
export async function resetCircuit(client: Client, hostId: string, serviceId: string, reason: string): Promise<CircuitState> {
  const handle = await client.workflow.signalWithStart(circuitBreaker, {
    workflowId: ids.circuit(hostId, serviceId),
    taskQueue: taskQueueFor(hostId),
    args: [{ serviceId }],
    signal: circuitResetSignal,
    signalArgs: [reason],
    typedSearchAttributes: serviceAttributes(hostId, serviceId),
  });
  return handle.result();
}
