/**
 * A keeper host as a Temporal worker sees it: its worker (every workflow, this host's activities), its schedules,
 * and what watches it between runs (src/app/host-watch.ts), over the dependencies opened by src/app/open.ts. The
 * Keeper (src/app/keeper.ts) builds it for the worker and the one-shot commands' own workers; benchmarks and test
 * helpers build theirs here too.
 */
import type { Client } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { heartbeatInterceptor } from '../activities/heartbeat';
import { DockerClient } from '../docker/client';
import type { DiskWatcher, DiskWatcherOptions } from '../host/disk-watcher';
import type { EventWatcher, EventWatcherOptions } from '../watch/event-watcher';
import type { HostDeps } from '../host/deps';
import { EventHints } from '../watch/event-hints';
import { taskQueueFor } from '../ids';
import { createActivities, LOOPS, type LoopName } from '../loops/registry';
import { ensureLoopSchedules } from '../loops/schedules';
import type { Settings } from '../settings';
import { prebuiltBundle, WORKFLOWS_PATH } from '../temporal/bundle';
import type { EventPath, LookRunner } from '../watch/look-runner';
import {
  createDiskWatcher,
  createEventWatcher,
  createHostWatch,
  createLooks,
  hostRequests,
  type HostRequests,
  type HostWatch,
} from './host-watch';
import { openHost, type HostParts } from './open';

export interface WorkerParts {
  connection: NativeConnection;
  namespace: string;
  /** A pre-built bundle (tests build it once); otherwise dist's bundle, or the sources. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  shutdownGraceTime?: WorkerOptions['shutdownGraceTime'];
  /**
   * Workflows in the process's own thread (the SDK's debugMode) instead of a thread per worker: for bench:fleet,
   * which runs hundreds of simulated hosts' workers in one process. Not for a real host: no deadlock detection.
   */
  workflowsInMainThread?: boolean;
}

export interface KeeperHost {
  deps: HostDeps;
  /** A worker polling this host's task queue with every workflow and this host's activities. */
  createWorker(parts: WorkerParts): Promise<Worker>;
  /** This host's loops' schedules, created or updated in place; then a first run of each loop that asks for one (the pool's). */
  ensureSchedules(client: Client): Promise<void>;
  /**
   * This host's run requests through `client`, one per loop, each kept until Temporal takes it: the event watcher,
   * the disk watcher and the local looks all ask through them.
   */
  requests(client: Client): HostRequests;
  /** The Docker event watcher (not started): it requests a reconcile tick when an ah container changes. */
  eventWatcher(client: Client, opts?: Pick<EventWatcherOptions, 'reconnect'>): EventWatcher;
  /** The local looks (not started): each loop's, at its --*-look-interval; the watcher, when given, is their event path. */
  looks(client: Client, opts?: { eventPath?: EventPath; intervalsMs?: Partial<Record<LoopName, number>> }): LookRunner;
  /** The disk watcher (not started): it requests a sweep of the gc schedule when a guarded path crosses the block threshold. */
  diskWatcher(client: Client, opts?: Pick<DiskWatcherOptions, 'intervalMs' | 'cooldownMs'>): DiskWatcher;
  /**
   * Everything that watches this host between runs, not started: the event watcher, the disk watcher and the local
   * looks (with the watcher as their event path), over one set of requests. A worker starts it and stops it.
   */
  watch(client: Client): HostWatch;
  /** Closes what the host opened itself (the DB when it was not given). */
  close(): void;
}

/**
 * Long polls a host's worker holds on the cluster's frontend. A host runs a few short runs an hour, so two
 * workflow-task polls (the SDK keeps one on its sticky queue) and one activity-task poll keep up. The SDK's
 * default is up to 10 of each, and a frontend holds at most `frontend.namespaceCount` (1,200 by default) long
 * polls per namespace and per API: 10 a host caps a frontend at 120 hosts, 2 at 600 (the rest are throttled and
 * retried, which loads the frontend further).
 */
export const WORKFLOW_TASK_POLLS = 2;
export const ACTIVITY_TASK_POLLS = 1;

/** How long running activities get to finish on SIGINT/SIGTERM. */
export const SHUTDOWN_GRACE = '30s';

export type { HostParts } from './open';

export type { HostRequests, HostWatch } from './host-watch';

export function createKeeperHost(settings: Settings, parts: HostParts = {}): KeeperHost {
  const opened = openHost(settings, 'worker', parts);
  // What the event watcher hears, for the runs and looks of this worker: a list entry of a container with a newer
  // event is no proof of anything (src/watch/event-hints.ts).
  const deps = { ...opened.deps, hints: opened.deps.hints ?? new EventHints() };
  const { metrics } = deps;
  // The adapter counts the engine API calls it makes; an engine given in its place (a test double) is not counted.
  if (metrics && deps.docker instanceof DockerClient) deps.docker.onCall = (operation) => metrics.dockerCalls.add(1, { operation });
  const parts$ = { settings, deps };
  const requestsByClient = new WeakMap<Client, HostRequests>();
  const requests = (client: Client): HostRequests => {
    const made = requestsByClient.get(client) ?? hostRequests(client, parts$);
    requestsByClient.set(client, made);
    return made;
  };
  return {
    deps,
    requests,
    async createWorker(w) {
      const bundle = w.workflowBundle ?? prebuiltBundle();
      const activityInterceptors = [heartbeatInterceptor()];
      return Worker.create({
        connection: w.connection,
        namespace: w.namespace,
        taskQueue: taskQueueFor(settings.hostId),
        activities: createActivities(deps),
        interceptors: { activity: activityInterceptors },
        ...(bundle ? { workflowBundle: bundle } : { workflowsPath: WORKFLOWS_PATH }),
        shutdownGraceTime: w.shutdownGraceTime ?? SHUTDOWN_GRACE,
        // Not maxConcurrent…TaskPolls: SDK 1.24 ignores those and polls 10 of each.
        workflowTaskPollerBehavior: { type: 'simple-maximum', maximum: WORKFLOW_TASK_POLLS },
        activityTaskPollerBehavior: { type: 'simple-maximum', maximum: ACTIVITY_TASK_POLLS },
        ...(w.workflowsInMainThread ? { debugMode: true } : {}),
      });
    },
    async ensureSchedules(client) {
      await ensureLoopSchedules(client, settings);
      // Best effort: a cluster busy starting many hosts' schedules may time out the pause check (a query of the new
      // schedule), and a worker must not fail its start for a run its look or its schedule requests anyway.
      for (const loop of LOOPS.filter((l) => l.runAtStart)) {
        await loop.request(client, settings.hostId, 'worker start').catch((err: Error) =>
          deps.log.warn(`could not request a first ${loop.name} run; its look requests one once it finds something to do`, {
            error: err.message,
          }),
        );
      }
    },
    eventWatcher: (client, opts = {}) => createEventWatcher(parts$, requests(client), opts),
    diskWatcher: (client, opts = {}) => createDiskWatcher(parts$, requests(client), opts),
    looks: (client, opts = {}) => createLooks(parts$, requests(client), opts),
    watch: (client) => createHostWatch(parts$, requests(client)),
    close: opened.close,
  };
}
