/**
 * Fault 6: the state DB's directory is full: a real 8 MiB tmpfs mounted for this test, filled with a real file
 * until ENOSPC. A tick and a refill run on the dev server against it; then space is freed. (Needs root, as CI is.)
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { WorkflowFailedError } from '@temporalio/client';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStateDb, type StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { taskQueueFor } from '../../src/ids';
import { poolRefill, reconcileTick } from '../../src/workflows';
import { EngineFixture, tempDir, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { devServerEnv, keeperWorker } from '../helpers/temporal';
import { addService, addServiceWithExitedContainer, addTenant, deployments, service } from '../reconcile/rows';

let env: TestWorkflowEnvironment;
const engine = new EngineFixture();
const docker = new DockerClient();
const mnt = tempDir('keeper-rel6-');
let db: StateDb | undefined;

// The tick is one local activity, whose failed attempts reach no history: the SDK's own warning for each one
// (`Activity failed`, with its error) is how this test sees them. Installed before any connection exists.
const sdkWarnings: LogEntry[] = [];

beforeAll(async () => {
  Runtime.install({ logger: new DefaultLogger('WARN', (e) => void sdkWarnings.push(e)), shutdownSignals: [] });
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m,mode=0700', 'tmpfs', mnt]);
  env = await devServerEnv();
});
afterAll(async () => {
  db?.close();
  execFileSync('umount', [mnt]);
  fs.rmSync(mnt, { recursive: true, force: true });
  await engine.cleanup();
  await env?.teardown();
});

/** Writes a filler file until the file system refuses (ENOSPC); returns its path. */
function fill(dir: string): string {
  const filler = path.join(dir, 'filler');
  const fd = fs.openSync(filler, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) fs.writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
    // The last few bytes a 64 KiB chunk did not fit.
    try {
      for (;;) fs.writeSync(fd, Buffer.alloc(512, 1));
    } catch {
      // full to the block
    }
  } finally {
    fs.closeSync(fd);
  }
  return filler;
}

function integrity(file: string): string {
  const check = new Database(file, { readonly: true });
  try {
    return check.pragma('integrity_check', { simple: true }) as string;
  } finally {
    check.close();
  }
}

describe('fault 6: the DB directory is full', () => {
  it('a tick fails its writes with a clear error and retries, the DB stays intact, and the same tick completes once space is freed', async () => {
    const file = path.join(mnt, 'data', 'state.db');
    db = openStateDb(file);
    const tenant = addTenant(db);
    const { sid } = await addServiceWithExitedContainer(engine, db, tenant, {}, 5);
    const stale = addService(db, tenant, { status: 'deploying', updatedAt: Math.floor(Date.now() / 1000) - 3600 });
    // An empty WAL, so that the next write must take new space.
    db.pragma('wal_checkpoint(TRUNCATE)');
    const filler = fill(mnt);
    const settings = testSettings({ db: file, pooledTemplates: '' });
    const worker = await keeperWorker(env, { db, docker, settings });

    await worker.runUntil(async () => {
      const tick = await env.client.workflow.start(reconcileTick, {
        taskQueue: taskQueueFor(settings.hostId),
        workflowId: uniqueId('tick-rel6-'),
      });
      const failure = await waitFor(
        'a failed attempt of the tick',
        () => {
          const e = sdkWarnings.find((w) => w.message === 'Activity failed');
          const error = e?.meta?.error as { message?: string } | undefined;
          return e && { activity: e.meta?.activityType, attempt: e.meta?.attempt, message: error?.message ?? '' };
        },
        30_000,
        200,
      );
      console.log('fault 6: while full:', JSON.stringify(failure));
      expect(failure.message).toMatch(/database or disk is full/i);
      expect(integrity(file)).toBe('ok');
      expect(service(db!, sid)).toMatchObject({ status: 'running', crash_count: 0 });

      // Space is freed while the tick is still retrying: it completes with nothing lost and nothing doubled.
      fs.rmSync(filler);
      const t0 = Date.now();
      const summary = await tick.result();
      console.log(`fault 6: tick completed ${Date.now() - t0} ms after space was freed`);
      expect(summary).toMatchObject({ crashes: 1, failedDeploys: 1 });
    });
    expect(integrity(file)).toBe('ok');
    expect(service(db, sid)).toMatchObject({ status: 'crashed', crash_count: 1 });
    expect(deployments(db, sid)).toHaveLength(1);
    expect(service(db, stale).status).toBe('failed');
    expect(deployments(db, stale)).toHaveLength(1);
  }, 90_000);

  it("a refill on a full DB directory fails with SQLite's disk-full error, the DB stays intact, and the next refill runs once space is freed", async () => {
    const file = path.join(mnt, 'data', 'state.db');
    db ??= openStateDb(file);
    const settings = testSettings({ db: file, pooledTemplates: '' });
    db.pragma('wal_checkpoint(TRUNCATE)');
    const filler = fill(mnt);
    const refill = () =>
      keeperWorker(env, { db: db!, docker, settings }).then((w) =>
        w.runUntil(
          env.client.workflow.execute(poolRefill, { taskQueue: taskQueueFor(settings.hostId), workflowId: uniqueId('refill-rel6-') }),
        ),
      );
    // Its first activity already writes (finished claims are deleted), so the refill fails before the disk guard runs.
    const err = await refill().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const cause = (err as WorkflowFailedError).cause as { message: string; cause?: { message: string } };
    console.log('fault 6: refill while full:', cause.message, '/', cause.cause?.message);
    // The refill's step failure, as the workflow reports it: SQLite's own error, whether wrapped or not.
    expect(cause.cause?.message ?? cause.message).toMatch(/database or disk is full/i);
    expect(integrity(file)).toBe('ok');
    fs.rmSync(filler);
    const after = await refill();
    expect(after).toMatchObject({ blocked: false });
    expect(after.error).toBeUndefined();
    expect(integrity(file)).toBe('ok');
  }, 90_000);
});
