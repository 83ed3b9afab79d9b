/** A keeper worker, the host's reconcile schedule and an event watcher, on the dev server and this suite's engine. */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import type { StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import type { EventWatcher } from '../../src/watch/event-watcher';
import { ids } from '../../src/ids';
import { createKeeperHost } from '../../src/app/keeper-host';
import type { Settings } from '../../src/settings';
import { loopSchedules } from '../../src/loops/schedules';
import { scheduleOptions } from '../../src/temporal/schedules';
import { waitFor } from '../helpers/fixtures';
import { captureLog } from '../helpers/log';
import { keeperWorker } from '../helpers/temporal';

export interface Host {
  worker: Worker;
  running: Promise<void>;
  logs: string[];
  stop(): Promise<void>;
}

/**
 * Runs a worker for settings.hostId and creates its reconcile schedule. `periodic: false` starts the schedule's
 * calendar tomorrow, so that no tick runs unless something triggers it: a tick seen then is the watcher's.
 */
export async function startHost(env: TestWorkflowEnvironment, db: StateDb, settings: Settings, periodic: boolean): Promise<Host> {
  const options = scheduleOptions(loopSchedules(settings, ['reconcile'])[0], settings.hostId);
  if (!periodic) options.spec = { ...options.spec, startAt: new Date(Date.now() + 86_400_000) };
  await env.client.schedule.create(options);
  const worker = await keeperWorker(env, { db, docker: new DockerClient(), settings });
  const running = worker.run();
  const logs: string[] = [];
  return {
    worker,
    running,
    logs,
    async stop() {
      await env.client.schedule
        .getHandle(ids.schedule(settings.hostId, 'reconcile'))
        .delete()
        .catch(() => undefined);
      worker.shutdown();
      await running;
    },
  };
}

/** The host's event watcher as the worker makes it, with fast reconnects and its log lines captured in `logs`. */
export function watcherFor(
  env: TestWorkflowEnvironment,
  db: StateDb,
  settings: Settings,
  logs: string[],
  dockerHost?: string,
): EventWatcher {
  const host = createKeeperHost(settings, { db, docker: new DockerClient(dockerHost), log: captureLog(logs).log });
  return host.eventWatcher(env.client, { reconnect: { minMs: 100, maxMs: 1000, unavailableAfter: 3 } });
}

/**
 * Ticks the host has finished: the schedule's (triggered or not; workflow ids cannot tell them apart, the schedule
 * names a run by the second it started) and the event watcher's reconcileOnEvents runs.
 */
export async function ticksDone(env: TestWorkflowEnvironment, hostId: string): Promise<number> {
  const d = await env.client.schedule.getHandle(ids.schedule(hostId, 'reconcile')).describe();
  const events = await env.client.workflow.count(`WorkflowId = "${ids.reconcileOnEvents(hostId)}" AND ExecutionStatus != "Running"`);
  return d.info.numActionsTaken - d.info.runningActions.length + events.count;
}

/** Waits until more than `before` ticks have finished; returns the count. */
export async function tickAfter(
  env: TestWorkflowEnvironment,
  hostId: string,
  before: number,
  what: string,
  timeoutMs = 15_000,
): Promise<number> {
  return waitFor(
    what,
    async () => {
      const n = await ticksDone(env, hostId);
      return n > before && n;
    },
    timeoutMs,
    50,
  );
}
