/**
 * Temporal for one one-shot command (`reconcile --once`, `gc --once`, `pool refill --once`, `health`,
 * `circuit reset`). It never waits on a task queue that no worker polls:
 * - on the configured server (or the embedded one of a running `npm start`), it runs through this host's
 *   worker when one polls `keeper-<host>`, and otherwise through a worker of its own, in this process;
 * - with no server anywhere, it brings up an in-memory dev server and a worker of its own.
 * A worker of its own drains the work the command started before the command returns: a circuit handed to its
 * workflow is recovered, not merely scheduled; what is left waiting on a timer is reported as handed on.
 */
import { Client } from '@temporalio/client';
import type { Workflow, WorkflowResultType } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { releaseCircuitHoldsSince } from '../db/circuit-holds';
import type { StateDb } from '../db/open';
import { taskQueueFor } from '../ids';
import type { Settings } from '../settings';
import { drainOwnWork, type Drained } from '../temporal/drain';
import { connectClient, describeTarget, resolveTemporalTarget, type TemporalTarget } from '../temporal/connection';
import { embeddedServerAnswering, resolveTemporalCli, startDevServer } from '../temporal/dev-server';
import { connectNative } from '../temporal/native';
import { executeOnHostQueue } from '../temporal/operations';
import type { KeeperHost } from './keeper-host';

export interface OneShot<T> {
  result: T;
  /** Where it ran: the host's worker, or a worker of the command's own (then with what it drained). */
  ranBy: 'host worker' | 'this command';
  /** Why the command ran a worker of its own. */
  why?: string;
  /** The server, as an operator would name it. */
  server: string;
  drained?: Drained;
}

/** What a one-shot run takes of its Keeper (src/app/keeper.ts): the parts, opened when first asked for. */
export interface OneShotParts {
  readonly settings: Settings;
  readonly db: StateDb;
  readonly host: KeeperHost;
  installRuntime(): void;
  onClose(what: string, close: () => Promise<unknown> | unknown): void;
}

type Target = TemporalTarget & { address: string };

/** Runs `fn` with a client on this host's Temporal while some worker polls the host's task queue. */
export async function runOnHost<T>(k: OneShotParts, fn: (client: Client) => Promise<T>): Promise<OneShot<T>> {
  // Only the host's worker creates a state DB; a --db that is not there is refused even when that worker runs `fn`.
  void k.db;
  const configured = resolveTemporalTarget(k.settings);
  const address = configured.address ?? (await embeddedServerAnswering());
  if (!address) return runOnOwnServer(k, configured.namespace, fn);
  const target = { ...configured, address };
  const connection = await connectClient(target);
  k.onClose('the client connection', () => connection.close());
  const client = new Client({ connection, namespace: target.namespace });
  const server = describeTarget(target);
  if (await hasPoller(client, taskQueueFor(k.settings.hostId))) return { result: await fn(client), ranBy: 'host worker', server };
  const why = `no worker polls ${taskQueueFor(k.settings.hostId)}`;
  return { ...(await runWithOwnWorker(k, target, client, fn)), why, server };
}

/** How long a command looks for a poller: a worker that has just started shows up at its first long poll. */
export const POLLER_LOOKUP_MS = 1_000;

/** Whether any worker polls the queue's workflow tasks (DescribeTaskQueue), looked up for up to `withinMs`. */
export async function hasPoller(client: Client, taskQueue: string, withinMs = POLLER_LOOKUP_MS): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const response = await client.workflowService.describeTaskQueue({
      namespace: client.options.namespace,
      taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    });
    if ((response.pollers ?? []).length > 0) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 200));
  }
}

type OwnRun<T> = Pick<OneShot<T>, 'result' | 'ranBy' | 'drained'>;

async function runWithOwnWorker<T>(
  k: OneShotParts,
  target: Target,
  client: Client,
  fn: (client: Client) => Promise<T>,
  serverGoesWithUs = false,
): Promise<OwnRun<T>> {
  k.installRuntime();
  const native = await connectNative(target);
  k.onClose('the worker connection', () => native.close());
  const worker = await k.host.createWorker({ connection: native, namespace: target.namespace, shutdownGraceTime: '5s' });
  const startedAt = new Date();
  const run = await worker.runUntil(async () => {
    const result = await fn(client);
    return { result, ranBy: 'this command' as const, drained: await drainOwnWork(client, taskQueueFor(k.settings.hostId), startedAt) };
  });
  // Circuits handed on to a server that exits with this command have no timer after it: the host's worker takes them.
  if (serverGoesWithUs && run.drained.handedOn.length > 0) releaseCircuitHoldsSince(k.db, Math.floor(startedAt.getTime() / 1000));
  return run;
}

async function runOnOwnServer<T>(k: OneShotParts, namespace: string, fn: (client: Client) => Promise<T>): Promise<OneShot<T>> {
  k.installRuntime();
  const server = await startDevServer({ binary: resolveTemporalCli(k.settings.temporalCli), namespace });
  k.onClose('the in-memory dev server', () => server.stop());
  const target: Target = {
    address: server.address,
    namespace,
    tls: undefined,
    apiKey: undefined,
    metadata: undefined,
    auth: 'none',
    profile: undefined,
  };
  const connection = await connectClient(target);
  k.onClose('the client connection', () => connection.close());
  const run = await runWithOwnWorker(k, target, new Client({ connection, namespace }), fn, true);
  return {
    ...run,
    why: 'no Temporal server is configured or running here',
    server: 'an in-memory dev server, gone when the command exits',
  };
}

/** Starts `workflow` as this host's one-shot run `workflowId` and waits for its result (see runOnHost). */
export function runOneShotWorkflow<W extends Workflow>(
  k: OneShotParts,
  workflow: W,
  workflowId: string,
  args: Parameters<W>,
): Promise<OneShot<WorkflowResultType<W>>> {
  return runOnHost(k, (client) => executeOnHostQueue(client, k.settings.hostId, workflow, workflowId, args));
}
