/**
 * keeper's log lines: one JSON object a line with the host; a line written inside an activity also names its
 * workflow run and activity. The last case runs a real reconcile tick on the dev server with a logger injected
 * into the host, and reads what its activity wrote.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerClient } from '../src/docker/client';
import { createLogger } from '../src/log';
import { captureLog } from './helpers/log';
import { freshDb, testSettings, uniqueId } from './helpers/fixtures';
import { devServerEnv } from './helpers/temporal';
import { addService, addTenant, runTick } from './reconcile/helpers';

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await devServerEnv();
});
afterAll(async () => {
  await env?.teardown();
});

describe('log lines', () => {
  it('outside an activity: JSON with time, level, message, the host and the fields; no run ids', () => {
    const lines: string[] = [];
    createLogger({ format: 'json', fields: { host: 'h1' }, write: (l) => void lines.push(l) })
      .child({ loop: 'gc' })
      .warn('gc: class skipped', { class: 'volumes' });
    const line = JSON.parse(lines[0]);
    expect(line).toEqual({
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      level: 'warn',
      msg: 'gc: class skipped',
      host: 'h1',
      loop: 'gc',
      class: 'volumes',
    });
  });

  it('pretty: one readable line with the fields as key=value', () => {
    const lines: string[] = [];
    createLogger({ format: 'pretty', fields: { host: 'h1' }, write: (l) => void lines.push(l) }).info('service crashed', {
      serviceId: 'svc1',
      deaths: 2,
    });
    expect(lines).toEqual([expect.stringMatching(/^\d\d:\d\d:\d\d INFO {2}service crashed host=h1 serviceId=svc1 deaths=2$/)]);
  });

  it("inside an activity: a tick's line names its workflow id, run id, activity id and type", async () => {
    const { db, file } = freshDb();
    const settings = testSettings({ db: file });
    const service = addService(db, addTenant(db), { status: 'weird' }); // reported once as bad input
    const workflowId = uniqueId('tick-log-');
    try {
      const captured = captureLog([], { host: settings.hostId });
      await runTick(env, { db, docker: new DockerClient(), settings, log: captured.log }, workflowId);
      const reported = captured.records().filter((l) => l.msg === 'bad input skipped');
      expect(reported).toEqual([
        expect.objectContaining({
          level: 'warn',
          host: settings.hostId,
          loop: 'reconcile',
          subject: `service:${service}`,
          workflowId,
          workflowRunId: expect.stringMatching(/^[0-9a-f-]{36}$/),
          workflowType: 'reconcileTick',
          activityId: expect.any(String),
          activityType: 'reconcileHost',
          attempt: 1,
        }),
      ]);
      expect(reported[0]).not.toHaveProperty('taskToken');
    } finally {
      db.close();
    }
  });
});
