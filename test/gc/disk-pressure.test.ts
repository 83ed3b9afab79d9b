/**
 * Disk pressure on a real filesystem that fills: a tmpfs mounted for this file, given in --disk-paths, a real
 * worker on the dev server with the host's gc schedule, and the worker's disk watcher. Crossing the block
 * threshold starts a gc sweep at once (the schedule's own first sweep is minutes away), with the age guard
 * unchanged; the pool stays blocked while the path is between the warning and the block threshold, and refills
 * again once it is under the warning threshold.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createKeeperHost } from '../../src/app/keeper-host';
import { lastLoopResults } from '../../src/db/loop-results';
import type { DiskWatcher } from '../../src/host/disk-watcher';
import { isPoolHeld, readDiskGuard } from '../../src/host/disk';
import { ids, taskQueueFor } from '../../src/ids';
import { ensureLoopSchedules } from '../../src/loops/schedules';
import { poolRefill } from '../../src/workflows';
import type { GcSweepResult } from '../../src/contracts/gc';
import { EngineFixture, freshDb, tempDir, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { captureLog } from '../helpers/log';
import { devServerForFile, keeperWorker } from '../helpers/temporal';

const fx = new EngineFixture();
const env = devServerForFile(fx);
const MiB = 1024 * 1024;
let mountDir = '';
let mounted = false;

beforeAll(() => {
  mountDir = tempDir('keeper-disk-pressure-');
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m,mode=0700', 'keeper-test-tmpfs', mountDir]);
  mounted = true;
});

afterAll(() => {
  if (mounted) execFileSync('umount', [mountDir]);
  if (mountDir) fs.rmSync(mountDir, { recursive: true, force: true });
});

/** Writes `mib` MiB of zeros to the file (replacing it): tmpfs counts every page written. */
function fill(file: string, mib: number): void {
  fs.writeFileSync(file, Buffer.alloc(Math.round(mib * MiB)));
}

it('crossing the block threshold starts a sweep at once; the pool stays blocked until the path is under the warning threshold', async () => {
  const { db, file } = freshDb();
  const lines: string[] = [];
  // warn 85 %, block 92 % of 8 MiB: 7.6 MiB blocks, 7 MiB is between, nothing is under.
  const settings = testSettings({ db: file, diskPaths: mountDir, diskWarn: '85', diskBlock: '92', buildDir: tempDir(), poolSize: '0' });
  const before = await readDiskGuard({ docker: fx.docker, settings });
  expect(
    before.paths.filter((p) => p.path !== mountDir).every((p) => p.level === 'ok'),
    before.message,
  ).toBe(true);
  // an orphan younger than --gc-min-age: the pressure sweep must keep it, as any sweep would
  const young = await fx.volume(`ah-kanban-${uniqueId()}`);
  await ensureLoopSchedules(env.client, settings, ['gc']);
  const schedule = env.client.schedule.getHandle(ids.schedule(settings.hostId, 'gc'));
  const host = createKeeperHost(settings, { db, docker: fx.docker, log: captureLog(lines).log });
  const watcher: DiskWatcher = host.diskWatcher(env.client, { intervalMs: 200 });
  const worker: Worker = await keeperWorker(env, { db, docker: fx.docker, settings });
  const refill = () =>
    env.client.workflow.execute(poolRefill, { taskQueue: taskQueueFor(settings.hostId), workflowId: uniqueId('pool-refill-') });
  const checksAfter = async (n: number) => waitFor(`${n} more disk checks`, () => watcher.checks >= n, 20_000, 50);
  const filler = path.join(mountDir, 'filler');
  try {
    await worker.runUntil(async () => {
      watcher.start();
      await checksAfter(watcher.checks + 2);
      expect(watcher.sweepsRequested).toBe(0);
      expect(lastLoopResults(db).find((r) => r.loop === 'gc')).toBeUndefined();

      fill(filler, 7.6);
      const crossedAt = Date.now();
      const recorded = await waitFor('the pressure sweep recorded', () => lastLoopResults(db).find((r) => r.loop === 'gc'), 30_000);
      const sweepMs = Date.now() - crossedAt;
      expect(recorded.workflowId).toMatch(new RegExp(`^keeper-${settings.hostId}-gc`));
      const summary = (recorded.result as Pick<GcSweepResult, 'summary'>).summary;
      expect(summary.find((s) => s.class === 'volumes')).toMatchObject({ removed: 0, failed: 0 });
      expect(await fx.docker.inspectVolume(young)).toBeTruthy();
      // one sweep for this crossing, however many checks see the path at the block
      await checksAfter(watcher.checks + 5);
      expect(watcher.sweepsRequested).toBe(1);
      expect(isPoolHeld({ db, settings })).toBe(true);
      expect(lines.some((l) => l.includes('disk pressure: started a GC sweep now'))).toBe(true);
      console.log(`disk pressure: sweep recorded ${sweepMs} ms after the path crossed the block threshold`);

      // freed a little: between warn and block, the refill is still blocked by the hold
      fill(filler, 7);
      await checksAfter(watcher.checks + 2);
      const held = await refill();
      expect(held.blocked).toBe(true);
      expect(held.error).toMatch(
        new RegExp(`above warning threshold 85%; held since a path reached the block threshold 92%, until every path is under 85%`),
      );

      // freed: under the warning threshold, the hold clears and the refill runs
      fs.rmSync(filler);
      await waitFor('the pool hold cleared', () => !isPoolHeld({ db, settings }), 20_000, 50);
      const free = await refill();
      expect(free).toMatchObject({ blocked: false, disk: { level: 'ok' } });
      expect(watcher.sweepsRequested).toBe(1);
      expect(lines.some((l) => l.includes('disk pressure over: every path is under the warning threshold again'))).toBe(true);
    });
  } finally {
    await watcher.stop();
    await schedule.delete();
    host.close();
    db.close();
  }
});
