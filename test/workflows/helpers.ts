/**
 * The one setup of the fast workflow tests: the shared time-skipping server, and a worker on a task queue of its
 * own whose activities are stubs written in the test (typed against keeper's real ones), running the workflow
 * bundle global setup built once. No Docker engine and no SQLite file is touched.
 */
import { WorkflowClient, type WorkflowHandle, type WorkflowStartOptions } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { Workflow } from '@temporalio/workflow';
import { afterAll, beforeAll, inject } from 'vitest';
import { createActivities, type Activities } from '../../src/loops/registry';
import type { HostDeps } from '../../src/host/deps';
import { silentLogger } from '../../src/log';
import { loadSettings } from '../../src/settings';
import { uniqueId, waitFor } from '../helpers/fixtures';
import { ownTimeSkippingServerForFile, timeSkippingForFile } from '../helpers/temporal';

const LEFT_RUNNING_WAIT_MS = 10_000;

/** Stub activities: any subset of keeper's, with the real signatures. */
export type Stubs = Partial<Activities>;

/** Every activity name keeper registers (the factory only builds closures: nothing is opened or called). */
const ACTIVITY_NAMES = Object.keys(
  createActivities({ log: silentLogger, settings: loadSettings({}, {}) } as unknown as HostDeps),
) as (keyof Activities)[];

interface SharedWorker {
  taskQueue: string;
  use(stubs: Stubs): void;
}
const sharedWorkers = new WeakMap<TestWorkflowEnvironment, SharedWorker>();

/**
 * The time-skipping server for the calling file's tests, with one worker that polls for all of them: a worker
 * costs ~300 ms to create, more than most of these tests. It registers every activity name and calls the
 * current test's stub (a name the test did not stub fails at once, non-retryable). Tests of a file run one at a
 * time, so one set of stubs is current at a time.
 */
export function stubWorkerEnvForFile(opts: { ownServer?: boolean } = {}): TestWorkflowEnvironment {
  const env = opts.ownServer ? ownTimeSkippingServerForFile() : timeSkippingForFile();
  const taskQueue = uniqueId('fast-');
  let current: Stubs = {};
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  const call =
    (name: keyof Activities) =>
    (...args: unknown[]) => {
      const stub = current[name] as ((...a: unknown[]) => unknown) | undefined;
      if (!stub) throw ApplicationFailure.nonRetryable(`the test stubs no activity ${name}`, 'NotStubbed');
      return stub(...args);
    };
  beforeAll(async () => {
    worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      activities: Object.fromEntries(ACTIVITY_NAMES.map((n) => [n, call(n)])),
    });
    running = worker.run();
    sharedWorkers.set(env, { taskQueue, use: (stubs) => (current = stubs) });
  });
  // Registered after timeSkippingForFile's: vitest runs afterAll hooks last-registered first, so the worker
  // stops before the connection it polls on closes.
  afterAll(async () => {
    worker?.shutdown();
    await running;
  });
  return env;
}

/**
 * Runs `body` while a worker polls a task queue with `stubs` as its activities (the file's shared worker, else
 * one of this call's own), then makes sure nothing was left running on that queue. Workflows started by `body`
 * must use the task queue it is given.
 */
export async function withStubWorker<T>(env: TestWorkflowEnvironment, stubs: Stubs, body: (taskQueue: string) => Promise<T>): Promise<T> {
  const shared = sharedWorkers.get(env);
  if (shared) {
    shared.use(stubs);
    const result = await body(shared.taskQueue);
    await noneLeftRunning(env, shared.taskQueue);
    return result;
  }
  const taskQueue = uniqueId('fast-');
  const worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities: stubs,
  });
  return worker.runUntil(async () => {
    const result = await body(taskQueue);
    await noneLeftRunning(env, taskQueue);
    return result;
  });
}

/**
 * The Java test server skips time only while no workflow task is pending, and a task on a queue whose worker
 * has gone stays pending for ever (terminating its workflow does not release it): one workflow left running
 * would stop time skipping for every later test. So a test waits, while its worker still runs, for what it
 * started to close; whatever is still open after the bound (e.g. waiting on a timer) is terminated and fails it.
 */
async function noneLeftRunning(env: TestWorkflowEnvironment, taskQueue: string): Promise<void> {
  const open = async () => {
    const { executions } = await env.connection.workflowService.listOpenWorkflowExecutions({
      namespace: env.namespace ?? 'default',
      maximumPageSize: 1000,
    });
    const handles = executions.map((e) => env.client.workflow.getHandle(e.execution?.workflowId ?? '', e.execution?.runId ?? undefined));
    const described = await Promise.all(handles.map(async (h) => ({ h, d: await h.describe() })));
    return described.filter(({ d }) => d.taskQueue === taskQueue && d.status.name === 'RUNNING').map(({ h }) => h);
  };
  const closed = await waitFor('workflows of this test to close', async () => (await open()).length === 0, LEFT_RUNNING_WAIT_MS).then(
    () => true,
    () => false,
  );
  if (closed) return;
  const left = await open();
  await Promise.all(left.map((h) => h.terminate('left running by a test')));
  throw new Error(`left running on ${taskQueue}: ${left.map((h) => h.workflowId).join(', ')}; wait for them or terminate them in the test`);
}

export interface Executed<W extends Workflow> {
  result: Awaited<ReturnType<W>>;
  handle: WorkflowHandle<W>;
}

/** Starts `workflow` with `args` on a stub worker and waits for its result, skipping time while it waits. */
export async function executeWithStubs<W extends Workflow>(
  env: TestWorkflowEnvironment,
  stubs: Stubs,
  workflow: W,
  ...args: Parameters<W>
): Promise<Executed<W>> {
  return withStubWorker(env, stubs, async (taskQueue) => {
    // `args` is typed by the caller's Parameters<W>; TypeScript cannot follow that into the options' conditional type.
    const options = { taskQueue, workflowId: uniqueId(`${workflow.name}-`), args } as unknown as WorkflowStartOptions<W>;
    const handle = await env.client.workflow.start(workflow, options);
    return { result: (await handle.result()) as Awaited<ReturnType<W>>, handle };
  });
}

/**
 * A client that waits on results in real time: the time-skipping client's result() lets the server jump to the
 * next timer of any workflow, which would fire a timer a test needs to stay pending.
 */
export function realTimeClient(env: TestWorkflowEnvironment): WorkflowClient {
  return new WorkflowClient({ connection: env.connection, namespace: env.namespace ?? 'default' });
}

/** Test-server time from the run's start to its close: what its durable timers made it wait. */
export async function elapsedMs(handle: WorkflowHandle): Promise<number> {
  const { startTime, closeTime } = await handle.describe();
  if (!closeTime) throw new Error(`workflow ${handle.workflowId} has not closed`);
  return closeTime.getTime() - startTime.getTime();
}
