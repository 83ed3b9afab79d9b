/**
 * What a one-shot command with a worker of its own waits for before it returns: every workflow it started on its
 * host's queue has finished, or is parked (no activity, workflow task or child pending: it waits on a timer or a
 * signal). A circuit whose retry time has passed is thus recovered before the command exits; one that waits for
 * its retry time is handed on (its row keeps the time, and the next worker of this host recovers it).
 */
import type { Client } from '@temporalio/client';

export interface Drained {
  finished: { workflowId: string; type: string; status: string }[];
  handedOn: { workflowId: string; type: string }[];
}

/** How long a command waits for its own work before it returns with what is left reported as handed on. */
export const DRAIN_TIMEOUT_MS = 60_000;
const POLL_MS = 200;

export async function drainOwnWork(client: Client, taskQueue: string, since: Date, timeoutMs = DRAIN_TIMEOUT_MS): Promise<Drained> {
  const deadline = Date.now() + timeoutMs;
  let parkedTwice = false;
  for (;;) {
    const running = await list(client, `TaskQueue="${taskQueue}" AND ExecutionStatus="Running" AND StartTime >= "${since.toISOString()}"`);
    const parked = (await Promise.all(running.map((w) => isParked(client, w.workflowId)))).every(Boolean);
    // Parked on two polls in a row: a workflow task that was about to be scheduled has had its chance.
    if (parked && parkedTwice) return report(client, taskQueue, since, running);
    parkedTwice = parked;
    if (Date.now() > deadline) return report(client, taskQueue, since, running);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

async function isParked(client: Client, workflowId: string): Promise<boolean> {
  const d = await client.workflowService.describeWorkflowExecution({ namespace: client.options.namespace, execution: { workflowId } });
  return (d.pendingActivities ?? []).length === 0 && (d.pendingChildren ?? []).length === 0 && !d.pendingWorkflowTask;
}

async function report(client: Client, taskQueue: string, since: Date, running: Listed[]): Promise<Drained> {
  const closed = await list(client, `TaskQueue="${taskQueue}" AND ExecutionStatus!="Running" AND StartTime >= "${since.toISOString()}"`);
  return {
    finished: closed.map((w) => ({ workflowId: w.workflowId, type: w.type, status: w.status })),
    handedOn: running.map((w) => ({ workflowId: w.workflowId, type: w.type })),
  };
}

interface Listed {
  workflowId: string;
  type: string;
  status: string;
}

async function list(client: Client, query: string): Promise<Listed[]> {
  const out: Listed[] = [];
  for await (const w of client.workflow.list({ query })) out.push({ workflowId: w.workflowId, type: w.type, status: w.status.name });
  return out;
}
