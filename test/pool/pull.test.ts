/**
 * Template images pulled in the background, on an engine of this file's own and a real registry on its loopback
 * (Debian's docker-registry, see ./registry.ts), with a real SQLite file and the shared dev server: the refill
 * never waits on a pull, a pull that ends asks the pool schedule for a refill, a failed one carries the registry's
 * error and waits for its next try, and one image has one pull at a time.
 */
import { execSync, spawnSync } from 'node:child_process';
import { ScheduleNotFoundError, ScheduleOverlapPolicy } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { imagePull, imagePulls } from '../../src/db/image-pulls';
import type { StateDb } from '../../src/db/open';
import type { PoolStatusReport } from '../../src/host/pool/admin';
import { ImagePulls } from '../../src/host/pool/pull';
import { ids, taskQueueFor } from '../../src/ids';
import type { Settings } from '../../src/settings';
import { ensureLoopSchedules } from '../../src/loops/schedules';
import { poolRefill } from '../../src/workflows';
import type { PoolRefillResult } from '../../src/contracts/pool';
import { keeperInProcess } from '../helpers/cli';
import { extraEngine, stopEngine, type ExtraEngine } from '../helpers/engines';
import { freshDb, TEST_IMAGE, TEST_TENANT_RUNTIME, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { captureLog, type CapturedLog } from '../helpers/log';
import { devServerEnv, keeperWorker } from '../helpers/temporal';
import { TestDockerClient } from '../helpers/test-docker';
import { readyByTemplate } from './helpers';
import { startRegistry, type LoopbackRegistry } from './registry';

let env: TestWorkflowEnvironment;
let engine: ExtraEngine | undefined;
let docker: TestDockerClient;
let registry: LoopbackRegistry | undefined;
let privateRegistry: LoopbackRegistry | undefined;
const dbs: StateDb[] = [];

beforeAll(async () => {
  engine = extraEngine('pool-pull');
  docker = new TestDockerClient(engine.dockerHost);
  registry = await startRegistry(engine);
  privateRegistry = await startRegistry(engine, { auth: true });
  env = await devServerEnv();
}, 180_000);
afterEach(() => {
  for (const db of dbs.splice(0)) db.close();
});
afterAll(async () => {
  await registry?.stop();
  await privateRegistry?.stop();
  await env?.teardown();
  // The engine is this file's own: stopping it removes every container, volume and image the tests made.
  if (engine) stopEngine(engine);
}, 300_000);

/** The docker CLI against this file's engine. */
function dockerCli(args: string): string {
  return execSync(`docker ${args}`, { env: { ...process.env, DOCKER_HOST: engine!.dockerHost }, encoding: 'utf8' });
}

/**
 * Makes an image of the test's own (the test image's filesystem, through `docker import`), pushes it to the
 * loopback registry as `ref`, and removes it from the engine again: only a pull can bring it back.
 */
function pushFreshImage(ref: string): void {
  const cid = dockerCli(`create ${TEST_IMAGE}`).trim();
  try {
    execSync(`docker export ${cid} | docker import - ${ref}`, { env: { ...process.env, DOCKER_HOST: engine!.dockerHost } });
  } finally {
    dockerCli(`rm ${cid}`);
  }
  dockerCli(`push ${ref}`);
  dockerCli(`rmi ${ref}`);
}

function hostDb(templates: Record<string, string>): { db: StateDb; file: string } {
  const fresh = freshDb();
  dbs.push(fresh.db);
  for (const [id, image] of Object.entries(templates))
    fresh.db.prepare('UPDATE environment_templates SET base_image = ? WHERE id = ?').run(image, id);
  return fresh;
}

function settingsFor(file: string, pooledTemplates: string): Settings {
  return testSettings({
    db: file,
    diskWarn: '99',
    diskBlock: '100',
    pooledTemplates,
    poolSize: '1',
    poolInterval: '1h',
    temporalAddress: inject('devServerAddress'),
  });
}

function refill(settings: Settings): Promise<PoolRefillResult> {
  return env.client.workflow.execute(poolRefill, { taskQueue: taskQueueFor(settings.hostId), workflowId: uniqueId('pool-refill-') });
}

const messages = (c: CapturedLog) => c.records().map((r) => String(r.msg));

describe('template images pulled in the background', () => {
  it('an absent image is pulled while the refill goes on; the pull asks for the refill that pools it; a ref the registry lacks fails with its error, the others unaffected', async () => {
    const made = `${registry!.address}/keeper-pull/made:${uniqueId('v')}`;
    const absent = `${registry!.address}/keeper-pull/absent:v1`;
    pushFreshImage(made);
    expect(await docker.imageExists(made)).toBe(false);
    const { db, file } = hostDb({ tmpl_default: made, tmpl_node: absent, tmpl_python: TEST_IMAGE });
    const settings = settingsFor(file, 'default,node,python');
    const capture = captureLog();
    // The pool schedule of this host, with an hour between its own runs: a refill within the test is one asked for.
    await ensureLoopSchedules(env.client, settings, ['pool']);
    const worker = await keeperWorker(env, { db, docker, settings, log: capture.log });
    try {
      await worker.runUntil(async () => {
        // Through the schedule, as the worker's refills run: one at a time (BUFFER_ONE), the pull's request after it.
        const schedule = env.client.schedule.getHandle(ids.schedule(settings.hostId, 'pool'));
        await schedule.trigger(ScheduleOverlapPolicy.BUFFER_ONE);
        await waitFor('the refill the pull asked for to pool the pulled image', () => readyByTemplate(db).tmpl_default === 1, 60_000);
        expect(await docker.imageExists(made)).toBe(true);
        // Logged once the trigger has returned, which the refill it started may beat.
        await waitFor('the pull to say it requested a refill', () => messages(capture).includes(`image ${made} pulled: refill requested`));
        const runs = await waitFor(
          'both refills to be done',
          async () => {
            const actions = (await schedule.describe()).info.recentActions;
            // By run: a schedule's run is named by its nominal second, so a refill asked for within the second of
            // the first has the first's workflow id, and the id alone would give the later run's result twice.
            const done = await Promise.all(
              actions.map(
                (a) =>
                  env.client.workflow
                    .getHandle(a.action.workflow.workflowId, undefined, { firstExecutionRunId: a.action.workflow.firstExecutionRunId })
                    .result() as Promise<PoolRefillResult>,
              ),
            );
            return done.length === 2 && done;
          },
          30_000,
        );
        // The first did not wait: both pulls were under way when it planned, and python was pooled as usual.
        expect(runs[0].plan?.missingImages?.map((m) => [m.name, m.pull?.state])).toEqual([
          ['default', 'pulling'],
          ['node', 'pulling'],
        ]);
        expect(runs[0].created.map((c) => c.templateId)).toEqual(['tmpl_python']);
        expect(runs[0]).toMatchObject({ failed: [], blocked: false });
        // The second, asked for by the pull, pooled default; node's pull had failed and was not yet due again.
        expect(runs[1].created.map((c) => c.templateId)).toEqual(['tmpl_default']);
        expect(runs[1].plan?.missingImages?.map((m) => [m.name, m.pull?.state])).toEqual([['node', 'failed']]);
      });
    } finally {
      await env.client.schedule
        .getHandle(ids.schedule(settings.hostId, 'pool'))
        .delete()
        .catch((e) => {
          if (!(e instanceof ScheduleNotFoundError)) throw e;
        });
    }
    expect(readyByTemplate(db)).toEqual({ tmpl_default: 1, tmpl_python: 1 });
    expect(imagePull(db, made)).toMatchObject({ state: 'pulled', attempts: 0, error: '', progress: '' });
    // The requested refill found node's pull failed and not yet due: it did not start another one.
    const failed = imagePull(db, absent)!;
    expect(failed).toMatchObject({ state: 'failed', attempts: 1, error: expect.stringContaining('manifest unknown') });
    expect(failed.error).toContain(absent);
    expect(failed.nextTryAt! - failed.finishedAt!).toBe(60);
    expect(messages(capture)).toEqual(
      expect.arrayContaining([
        `pulling image ${made} in the background (attempt 1); its templates are pooled once it is here`,
        expect.stringMatching(
          new RegExp(
            `^image pull of ${absent.replace(/[.]/g, '\\.')} failed \\(attempt 1\\): .*manifest unknown.*; next try at a refill after `,
          ),
        ),
      ]),
    );

    const flags = [
      '--db',
      file,
      '--host-id',
      settings.hostId,
      '--pooled-templates',
      'default,node,python',
      '--tenant-runtime',
      TEST_TENANT_RUNTIME,
    ];
    const human = await keeperInProcess(['pool', 'status', ...flags]);
    expect(human.code).toBe(0);
    expect(human.out).toMatch(new RegExp(`^pull ${made.replace(/[.]/g, '\\.')} \\(default\\): pulled \\d{4}-\\d\\d-\\d\\dT[\\d:]+Z$`, 'm'));
    expect(human.out).toMatch(
      /^pull .*absent:v1 \(node\): failed \(attempt 1\): .*manifest unknown.*; next try at \d{4}-\d\d-\d\dT[\d:]+Z$/m,
    );
    const json = JSON.parse((await keeperInProcess(['pool', 'status', '--json', ...flags])).out) as PoolStatusReport;
    // By image: absent:v1 sorts before made:….
    expect(json.pulls.map((p) => [p.templates, p.state])).toEqual([
      [['node'], 'failed'],
      [['default'], 'pulled'],
    ]);
  }, 180_000);

  it('a registry that wants credentials: the pull fails saying keeper holds none', async () => {
    const ref = `${privateRegistry!.address}/keeper-pull/private:v1`;
    const { db, file } = hostDb({ tmpl_default: ref, tmpl_python: TEST_IMAGE });
    const settings = settingsFor(file, 'default,python');
    const worker = await keeperWorker(env, { db, docker, settings, log: captureLog().log });
    await worker.runUntil(async () => {
      const result = await refill(settings);
      expect(result.created.map((c) => c.templateId)).toEqual(['tmpl_python']);
      await waitFor('the pull to fail', () => imagePull(db, ref)?.state === 'failed', 30_000);
    });
    const { error } = imagePull(db, ref)!;
    expect(error).toContain('no basic auth credentials');
    expect(error).toContain(
      `(the registry of ${ref} wants credentials; keeper holds none: pull it on this engine with docker login and docker pull)`,
    );
    expect(error.split('\n')).toHaveLength(1);
  }, 120_000);

  it('one pull per image: two templates on one image share it; a pull a live process runs is waited for, one a dead process left is started again', async () => {
    const shared = `${registry!.address}/keeper-pull/shared:${uniqueId('v')}`;
    pushFreshImage(shared);
    const { db, file } = hostDb({ tmpl_default: shared, tmpl_node: shared });
    const settings = settingsFor(file, 'default,node');
    const now = Math.floor(Date.now() / 1000);
    // A pull under way in a live process (this one stands for a worker pulling it right now).
    db.prepare(
      `INSERT INTO keeper_image_pulls (image, state, attempts, started_at, owner_pid, updated_at) VALUES (?, 'pulling', 1, ?, ?, ?)`,
    ).run(shared, now, process.pid, now);
    const capture = captureLog();
    const worker = await keeperWorker(env, { db, docker, settings, log: capture.log });
    await worker.runUntil(async () => {
      const waiting = await refill(settings);
      expect(waiting.plan?.missingImages?.map((m) => m.pull?.state)).toEqual(['pulling', 'pulling']);
      expect(imagePulls(db)).toEqual([expect.objectContaining({ image: shared, attempts: 1, ownerPid: process.pid, startedAt: now })]);
      expect(await docker.imageExists(shared)).toBe(false);

      // Its process is gone (a worker restarted mid-pull): the next refill starts it again, once for both templates.
      const gone = spawnSync('true').pid!;
      db.prepare('UPDATE keeper_image_pulls SET owner_pid = ?').run(gone);
      const status = await keeperInProcess([
        'pool',
        'status',
        '--db',
        file,
        '--host-id',
        settings.hostId,
        '--tenant-runtime',
        TEST_TENANT_RUNTIME,
      ]);
      expect(status.out).toMatch(
        /^pull .*shared:.* \(default, node\): pulling since .*; its process has ended, the next refill starts it again$/m,
      );
      await refill(settings);
      // This host has no pool schedule: the pull says so once its request for a refill is refused (after the pull is
      // recorded as done), and the next refill pools the image.
      const notTriggered = new RegExp(`^image .*shared:.* pulled: refill not requested \\(.+\\); the next pool run refills$`);
      await waitFor(
        'the pull to end and say its refill was not requested',
        () => messages(capture).some((m) => notTriggered.test(m)),
        60_000,
      );
      expect(imagePulls(db)).toEqual([expect.objectContaining({ image: shared, state: 'pulled', ownerPid: process.pid })]);
      const filled = await refill(settings);
      expect(filled.created.map((c) => c.templateId).sort()).toEqual(['tmpl_default', 'tmpl_node']);
    });
    expect(readyByTemplate(db)).toEqual({ tmpl_default: 1, tmpl_node: 1 });
  }, 120_000);

  it('a running pull writes its progress to the state DB and the log, and asks for a refill when it ends (the host operation alone)', async () => {
    const ref = `${registry!.address}/keeper-pull/progress:${uniqueId('v')}`;
    pushFreshImage(ref);
    const { db } = hostDb({});
    const capture = captureLog();
    // A clock that moves 10 s on each read: every progress line of the engine is past the 5 s between writes.
    let nowMs = Date.now();
    const clock = { nowMs: () => (nowMs += 10_000) };
    const progressSeen: string[] = [];
    const asked: string[] = [];
    const pulls = new ImagePulls({ db, docker, log: capture.log, clock }, async (why) => {
      progressSeen.push(...imagePulls(db).map((r) => r.progress));
      asked.push(why);
    });
    expect(pulls.ensure([ref, ref]).get(ref)).toMatchObject({ state: 'pulling', attempts: 1 });
    expect(pulls.ensure([ref]).get(ref)).toMatchObject({ state: 'pulling', attempts: 1 }); // one pull per image
    await pulls.settled();
    expect(asked).toEqual([`image ${ref} pulled`]);
    expect(progressSeen).toEqual(['']); // cleared once pulled
    const lines = messages(capture).filter((m) => m.startsWith(`pulling image ${ref}: `));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.at(-1)).toMatch(/: 1\/1 layers done, [\d.]+\/[\d.]+ MB$/);
    expect(messages(capture)).toContainEqual(
      expect.stringMatching(/^pulled image .*progress.* \(1\/1 layers done, [\d.]+\/[\d.]+ MB\); requesting a refill$/),
    );
    expect(imagePull(db, ref)).toMatchObject({ state: 'pulled', attempts: 0 });
  }, 120_000);

  it('a failed pull asks for a refill when its next try is due (the host operation alone), and that refill tries again', async () => {
    const absent = `${registry!.address}/keeper-pull/absent:v2`;
    const { db } = hostDb({});
    // A clock that moves 40 s on each read: the 60 s backoff is over by the time the pull sets its timer.
    let nowMs = Date.now();
    const clock = { nowMs: () => (nowMs += 40_000) };
    const asked: string[] = [];
    const pulls = new ImagePulls({ db, docker, log: captureLog().log, clock }, async (why) => void asked.push(why));
    pulls.ensure([absent]);
    await waitFor('the refill request of the due retry', () => asked.length > 0, 30_000);
    expect(asked).toEqual([`the next pull of image ${absent} is due`]);
    expect(imagePull(db, absent)).toMatchObject({ state: 'failed', attempts: 1 });
    pulls.ensure([absent]);
    await pulls.settled();
    expect(imagePull(db, absent)).toMatchObject({ state: 'failed', attempts: 2, error: expect.stringContaining('manifest unknown') });
  }, 60_000);
});
