/**
 * Two hosts, one Temporal server: each host's worker has its own id, state DB and Docker engine (the second
 * a separate dockerd in a network namespace of its own). Workflows and schedules of one host must run on its queue only, and
 * its activities must touch only its own engine and DB.
 */
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStateDb, type StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { ids, taskQueueFor } from '../../src/ids';
import type { Settings } from '../../src/settings';
import { ensureLoopSchedules } from '../../src/loops/schedules';
import { hostHealth } from '../../src/workflows';
import { extraEngine } from '../helpers/engines';
import { tempDir, testSettings } from '../helpers/fixtures';
import { devServerEnv, keeperWorker } from '../helpers/temporal';

interface Host {
  settings: Settings;
  db: StateDb;
  docker: DockerClient;
  worker: Worker;
  run: Promise<void>;
}

describe('two hosts on one Temporal server', () => {
  let env: TestWorkflowEnvironment;
  const hosts: Host[] = [];

  async function startHost(dockerHost: string | undefined): Promise<Host> {
    const settings = testSettings();
    const dir = tempDir();
    const db = openStateDb(path.join(dir, 'state.db'));
    const docker = new DockerClient(dockerHost);
    const worker = await keeperWorker(env, { db, docker, settings });
    return { settings, db, docker, worker, run: worker.run() };
  }

  beforeAll(async () => {
    env = await devServerEnv();
    hosts.push(await startHost(undefined), await startHost(extraEngine('hostb').dockerHost));
  });

  afterAll(async () => {
    for (const h of hosts) {
      h.worker.shutdown();
      await h.run;
      h.db.close();
    }
    await env?.teardown();
  });

  it("runs each host's workflow on its own queue against its own engine and DB", async () => {
    const [a, b] = hosts;
    const roots = await Promise.all([a.docker.info(), b.docker.info()]).then((i) => i.map((x) => x.dockerRootDir));
    expect(roots[0]).not.toBe(roots[1]);
    for (const [i, h] of hosts.entries()) {
      for (const x of hosts) x.docker.resetCalls();
      const health = await env.client.workflow.execute(hostHealth, {
        taskQueue: taskQueueFor(h.settings.hostId),
        workflowId: ids.health(h.settings.hostId),
      });
      expect(health.taskQueue).toBe(`keeper-${h.settings.hostId}`);
      expect(health.engine).toMatchObject({ reachable: true, dockerRootDir: roots[i] });
      expect(h.docker.totalCalls).toBeGreaterThan(0);
      expect(hosts[1 - i].docker.totalCalls).toBe(0);
    }
  });

  it("keeps each host's schedules apart, and creating them twice does not duplicate them", async () => {
    for (const h of hosts) {
      await ensureLoopSchedules(env.client, h.settings);
      await ensureLoopSchedules(env.client, h.settings);
    }
    for (const h of hosts) {
      for (const loop of ['reconcile', 'gc', 'pool'] as const) {
        const d = await env.client.schedule.getHandle(ids.schedule(h.settings.hostId, loop)).describe();
        expect(d.action.type === 'startWorkflow' && d.action.taskQueue).toBe(taskQueueFor(h.settings.hostId));
      }
    }
    const mine = [];
    for await (const s of env.client.schedule.list())
      if (hosts.some((h) => s.scheduleId.startsWith(`keeper-${h.settings.hostId}-`))) mine.push(s.scheduleId);
    expect(mine.sort()).toEqual(hosts.flatMap((h) => ['gc', 'pool', 'reconcile'].map((l) => `keeper-${h.settings.hostId}-${l}`)).sort());
    for (const id of mine) await env.client.schedule.getHandle(id).delete();
  });
});
