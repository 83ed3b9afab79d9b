/**
 * The `gc` schedule of a host starts gcSweep with no argument (a real sweep, not a dry run) on the host's
 * queue, and the sweep records its summary as the gc loop's last result. Real dev server, engine and DB.
 */
import { expect, it } from 'vitest';
import { lastLoopResults } from '../../src/db/loop-results';
import { DockerClient } from '../../src/docker/client';
import { ids } from '../../src/ids';
import { requestRun } from '../../src/temporal/operations';
import { ensureLoopSchedules } from '../../src/loops/schedules';
import { schedulePhaseMs } from '../../src/temporal/schedules';
import { EngineFixture, freshDb, tempDir, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { devServerForFile, keeperWorker } from '../helpers/temporal';

const fx = new EngineFixture();
const env = devServerForFile(fx);

it('a triggered gc schedule runs a real sweep on this host and records it', async () => {
  const { db } = freshDb();
  const settings = testSettings({ gcMinAge: '0s', buildDir: tempDir() });
  const orphan = await fx.volume(`ah-kanban-${uniqueId()}`);
  await ensureLoopSchedules(env.client, settings, ['gc']);
  const schedule = env.client.schedule.getHandle(ids.schedule(settings.hostId, 'gc'));
  try {
    const described = await schedule.describe();
    expect(described.action).toMatchObject({ workflowType: 'gcSweep', args: [] });
    // the first sweep waits gc-first-delay (2m) after the worker starts
    expect(described.spec.startAt!.getTime()).toBeGreaterThan(Date.now() + 60_000);
    // At this host's own phase of the interval, not the epoch-aligned instant every host would share.
    const interval = described.spec.intervals![0];
    expect(interval.offset).toBe(schedulePhaseMs(settings.hostId, 'gc', settings.gcIntervalMs));

    const worker = await keeperWorker(env, { db, docker: new DockerClient(), settings });
    await worker.runUntil(async () => {
      await requestRun(env.client, settings.hostId, 'gc');
      const recorded = await waitFor('the gc loop result', () => lastLoopResults(db).find((r) => r.loop === 'gc'), 30_000);
      expect(recorded.workflowId).toMatch(new RegExp(`^keeper-${settings.hostId}-gc`));
      expect(recorded.result).toMatchObject({ totals: { removed: expect.any(Number), classErrors: 0 } });
      const summary = (recorded.result as { summary: { class: string; removed: number }[] }).summary;
      expect(summary.find((s) => s.class === 'volumes')!.removed).toBeGreaterThanOrEqual(1);
    });
    await expect(fx.docker.inspectVolume(orphan)).rejects.toMatchObject({ isNotFound: true });
  } finally {
    await schedule.delete();
    db.close();
  }
});
