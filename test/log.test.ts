/**
 * keeper's log lines: one JSON object a line with the host; a line written inside an activity also names its
 * workflow run and activity. The second case runs a real reconcile tick on the dev server and reads what its
 * activity wrote to stderr.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerClient } from '../src/docker/client';
import { createLogger } from '../src/log';
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

/** Runs `fn` with process.stderr captured, and returns the lines written. */
async function stderrLines(fn: () => Promise<unknown>): Promise<string[]> {
  const lines: string[] = [];
  const original = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  }) as typeof process.stderr.write;
  try {
    await fn();
  } finally {
    process.stderr.write = original;
  }
  return lines;
}

describe('log lines', () => {
  it('outside an activity: JSON with time, level, message, the host and the fields; no run ids', () => {
    const lines: string[] = [];
    createLogger('json', { host: 'h1' }, (l) => lines.push(l)).child({ loop: 'gc' }).warn('gc: class skipped', { class: 'volumes' });
    const line = JSON.parse(lines[0]);
    expect(line).toEqual({ time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), level: 'warn', msg: 'gc: class skipped', host: 'h1', loop: 'gc', class: 'volumes' });
  });

  it('pretty: one readable line with the fields as key=value', () => {
    const lines: string[] = [];
    createLogger('pretty', { host: 'h1' }, (l) => lines.push(l)).info('service crashed', { serviceId: 'svc1', deaths: 2 });
    expect(lines).toEqual([expect.stringMatching(/^\d\d:\d\d:\d\d INFO  service crashed host=h1 serviceId=svc1 deaths=2$/)]);
  });

  it("inside an activity: a tick's line names its workflow id, run id, activity id and type", async () => {
    const { db, file } = freshDb();
    const settings = testSettings({ db: file });
    const service = addService(db, addTenant(db), { status: 'weird' }); // reported once as bad input
    const workflowId = uniqueId('tick-log-');
    try {
      const lines = await stderrLines(() => runTick(env, { db, docker: new DockerClient(), settings }, workflowId));
      const reported = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter((l) => l.msg === 'bad input skipped');
      expect(reported).toEqual([
        expect.objectContaining({
          level: 'warn', host: settings.hostId, loop: 'reconcile', subject: `service:${service}`,
          workflowId, runId: expect.stringMatching(/^[0-9a-f-]{36}$/), workflowType: 'reconcileTick',
          activityId: expect.any(String), activityType: expect.any(String), attempt: 1,
        }),
      ]);
    } finally {
      db.close();
    }
  });
});
