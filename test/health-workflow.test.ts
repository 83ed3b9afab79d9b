/**
 * The whole chain, end to end: a workflow on this host's task queue calls activities that read the real
 * Docker engine and a real SQLite file. Once on the time-skipping server, once on the CLI dev server.
 */
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStateDb, type StateDb } from '../src/db/open';
import { DockerClient } from '../src/docker/client';
import { ids, taskQueueFor } from '../src/ids';
import { hostHealth } from '../src/workflows';
import { tempDir, testSettings } from './helpers/fixtures';
import { devServerEnv, keeperWorker, timeSkippingEnv } from './helpers/temporal';

describe.each([
  ['time-skipping server', timeSkippingEnv],
  ['dev server', devServerEnv],
])('hostHealth on the %s', (_name, makeEnv) => {
  let env: TestWorkflowEnvironment;
  let db: StateDb;
  beforeAll(async () => {
    env = await makeEnv();
    db = openStateDb(path.join(tempDir(), 'state.db'));
  });
  afterAll(async () => {
    db?.close();
    await env?.teardown();
  });

  it("reads this host's engine and schema through activities", async () => {
    const settings = testSettings();
    const worker = await keeperWorker(env, { db, docker: new DockerClient(), settings });
    const result = await worker.runUntil(
      env.client.workflow.execute(hostHealth, { taskQueue: taskQueueFor(settings.hostId), workflowId: ids.health(settings.hostId) }),
    );
    expect(result.taskQueue).toBe(`keeper-${settings.hostId}`);
    expect(result.engine).toMatchObject({
      reachable: true,
      serverVersion: expect.stringMatching(/^\d+\./),
      dockerRootDir: expect.any(String),
    });
    expect(result.schema).toEqual({ ah: 'state_019_env_previews.sql', keeper: expect.any(Number) });
  });

  it('reports an unreachable engine instead of failing', async () => {
    const settings = testSettings();
    const docker = new DockerClient('unix:///nonexistent/docker.sock');
    const worker = await keeperWorker(env, { db, docker, settings });
    const result = await worker.runUntil(
      env.client.workflow.execute(hostHealth, { taskQueue: taskQueueFor(settings.hostId), workflowId: ids.health(settings.hostId) }),
    );
    expect(result.engine).toMatchObject({ reachable: false, error: expect.stringContaining('docker info: ENOENT') });
  });
});
