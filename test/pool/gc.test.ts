/**
 * The pool and GC together on the real engine (W-G2, W-G3): a GC sweep with the age guard off keeps ready
 * pool containers and volumes, keeps a claimed container and its ah-pool volume (held through the
 * environment row), keeps that volume even once its container is gone, and still removes a true leftover.
 */
import { describe, expect, it } from 'vitest';
import { claimEnvironment } from '../../src/host/pool/claim';
import { createPoolActivities } from '../../src/activities/pool';
import type { StateDb } from '../../src/db/open';
import { isNotFound } from '../../src/docker/errors';
import type { Settings } from '../../src/settings';
import { taskQueueFor } from '../../src/ids';
import { gcSweep } from '../../src/workflows/gcSweep';
import type { GcSweepResult } from '../../src/contracts/gc';
import { tempDir, testDeps, testSettings, TEST_TENANT_RUNTIME, uniqueId } from '../helpers/fixtures';
import { keeperWorker } from '../helpers/temporal';
import { poolDb, poolTestFile } from './helpers';
import { TestDockerClient } from '../helpers/test-docker';

const env = poolTestFile();
let db: StateDb;
const docker = new TestDockerClient();

async function sweep(settings: Settings): Promise<GcSweepResult> {
  const worker = await keeperWorker(env, { db, docker, settings });
  return worker.runUntil(
    env.client.workflow.execute(gcSweep, { taskQueue: taskQueueFor(settings.hostId), workflowId: uniqueId('gc-pool-'), args: [] }),
  );
}

const exists = (p: Promise<unknown>) =>
  p.then(
    () => true,
    (e) => (isNotFound(e) ? false : Promise.reject(e)),
  );

describe('pool resources under GC', () => {
  it("a claimed container's volume survives a GC sweep, also after its container is gone", async () => {
    const t = poolDb();
    db = t.db;
    const settings = testSettings({ db: t.file, gcMinAge: '0s', buildDir: tempDir(), diskWarn: '99', diskBlock: '100' });
    const acts = createPoolActivities(testDeps({ db, docker, settings }));
    const a = await acts.createPoolEntry({ entryId: uniqueId('wp_'), templateId: 'tmpl_default' });
    const b = await acts.createPoolEntry({ entryId: uniqueId('wp_'), templateId: 'tmpl_default' });
    const claim = await claimEnvironment({ db, docker, tenantRuntime: TEST_TENANT_RUNTIME }, { tenant: t.tenant, name: 'kept' });
    // Both entries share a created_at second, so which one the claim takes is not fixed; the other stays ready.
    expect(claim).toMatchObject({ mode: 'warm', volume: expect.stringMatching(/^ah-pool-wp_/) });
    expect([a.containerId, b.containerId]).toContain(claim.containerId);
    const stillReady = claim.containerId === a.containerId ? b : a;
    const readyVolume = db.prepare('SELECT volume_name FROM warm_pool').pluck().get() as string;
    const leftover = `ah-pool-${uniqueId('wp_')}`;
    await docker.createVolume(leftover); // no row anywhere: GC's to take

    const first = await sweep(settings);
    expect(first.totals.classErrors).toBe(0);
    expect((await docker.inspectContainer(claim.containerId)).status).toBe('running');
    expect(await exists(docker.inspectVolume(claim.volume))).toBe(true);
    expect((await docker.inspectContainer(stillReady.containerId!)).status).toBe('running');
    expect(await exists(docker.inspectVolume(readyVolume))).toBe(true);
    expect(await exists(docker.inspectVolume(leftover))).toBe(false);

    // W-G3: the environment's container disappears (e.g. an operator's `docker container prune`), its row stays.
    await docker.removeContainer(claim.containerId, { force: true });
    const second = await sweep(settings);
    expect(second.totals.classErrors).toBe(0);
    expect(await exists(docker.inspectVolume(claim.volume))).toBe(true);
    expect(db.prepare('SELECT volume_name FROM environments WHERE id = ?').pluck().get(claim.envId)).toBe(claim.volume);
  });
});
