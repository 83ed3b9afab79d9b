/**
 * The refill's expected conditions on the real engine, a real SQLite file and the dev server: a template whose
 * image the engine lacks, and the disk guard's block, are each one warning line with the hint, not one a refill
 * (nor again after a worker restart), and one line when they clear.
 */
import { describe, expect, it } from 'vitest';
import type { StateDb } from '../../src/db/open';
import { taskQueueFor } from '../../src/ids';
import type { RawSettings, Settings } from '../../src/settings';
import { poolRefill } from '../../src/workflows';
import type { PoolRefillResult } from '../../src/contracts/pool';
import { TEST_IMAGE, testSettings, uniqueId } from '../helpers/fixtures';
import { captureLog, type CapturedLog } from '../helpers/log';
import { keeperWorker } from '../helpers/temporal';
import { poolDb, poolTestFile, readyByTemplate } from './helpers';

const env = poolTestFile();
// On a loopback port where no registry listens: the background pull this starts fails at once, and reaches no network.
const MISSING = '127.0.0.1:9/keeper-test/missing:latest';

/** One refill on a fresh worker (as after a restart), logging into `capture`. */
async function refill(db: StateDb, settings: Settings, capture: CapturedLog): Promise<PoolRefillResult> {
  const worker = await keeperWorker(env, { db, settings, log: capture.log });
  return worker.runUntil(
    env.client.workflow.execute(poolRefill, { taskQueue: taskQueueFor(settings.hostId), workflowId: uniqueId('pool-refill-') }),
  );
}

/** keeper's own lines about conditions (not the SDK's, nor other lines the worker writes). */
const conditionLines = (c: CapturedLog) =>
  c
    .records()
    .filter((r) => r.condition !== undefined)
    .map((r) => ({ level: r.level, msg: r.msg }));

const settingsFor = (file: string, hostId: string, extra: RawSettings = {}) =>
  testSettings({ db: file, hostId, diskWarn: '99', diskBlock: '100', pooledTemplates: 'default,node', poolSize: '1', ...extra });

describe('refill conditions, logged once', () => {
  it('a missing template image: one warning with the hint over three refills and a restart, the other template still filled, one line when it clears', async () => {
    const { db, file } = poolDb();
    const settings = settingsFor(file, uniqueId('host-'));
    db.prepare(`UPDATE environment_templates SET base_image = ? WHERE id = 'tmpl_node'`).run(MISSING);
    const capture = captureLog();
    const first = await refill(db, settings, capture);
    await refill(db, settings, capture);
    await refill(db, settings, capture);

    expect(first.plan?.missingImages).toEqual([
      { templateId: 'tmpl_node', name: 'node', image: MISSING, pull: expect.objectContaining({ attempts: 1 }) },
    ]);
    expect(first.failed).toEqual([]); // a condition of the refill, not a failed activity
    expect(first.error).toBeUndefined();
    expect(readyByTemplate(db)).toEqual({ tmpl_default: 1 });
    expect(conditionLines(capture)).toEqual([
      {
        level: 'warn',
        msg: `template node: image ${MISSING} is not on this engine; keeper pulls it in the background (keeper pool status shows how), or drop node from --pooled-templates`,
      },
    ]);

    db.prepare(`UPDATE environment_templates SET base_image = ? WHERE id = 'tmpl_node'`).run(TEST_IMAGE);
    await refill(db, settings, capture);
    await refill(db, settings, capture);
    expect(conditionLines(capture).slice(1)).toEqual([
      { level: 'info', msg: `template node: no longer held back by a missing image (${MISSING} is on this engine, or node is not pooled)` },
    ]);
    expect(readyByTemplate(db)).toEqual({ tmpl_default: 1, tmpl_node: 1 });
  });

  it('the disk guard: a block is one warning and holds the pool until every path is under the warning threshold; then one line each; each host has its own', async () => {
    const { db, file } = poolDb();
    const host = uniqueId('host-');
    const capture = captureLog();
    const blocked = await refill(db, settingsFor(file, host, { diskWarn: '0', diskBlock: '0' }), capture);
    await refill(db, settingsFor(file, host, { diskWarn: '0', diskBlock: '0' }), capture);
    expect(blocked).toMatchObject({ blocked: true, created: [] });
    const lines = () => conditionLines(capture);
    expect(lines()).toEqual([
      {
        level: 'warn',
        msg: expect.stringMatching(
          /^disk pressure: .* reached the block threshold 0%; GC sweeps now, and pool refills stay blocked until every path is under 0%$/,
        ),
      },
      {
        level: 'warn',
        msg: expect.stringMatching(
          /^pool refill blocked by the disk guard: insufficient disk space at .*; free space there, or raise --disk-block$/,
        ),
      },
    ]);

    // Under the block but still above the warning threshold: the hold keeps the pool blocked, and says nothing new.
    const held = await refill(db, settingsFor(file, host, { diskWarn: '0', diskBlock: '100' }), capture);
    await refill(db, settingsFor(file, host, { diskWarn: '0', diskBlock: '100' }), capture);
    expect(held).toMatchObject({ blocked: true, created: [] });
    expect(lines()).toHaveLength(2);

    // Another host on the same DB has not reported it yet.
    const other = captureLog();
    await refill(db, settingsFor(file, uniqueId('host-'), { diskWarn: '0', diskBlock: '100' }), other);
    expect(conditionLines(other)).toHaveLength(1);

    await refill(db, settingsFor(file, host), capture);
    await refill(db, settingsFor(file, host), capture);
    expect(lines().slice(2)).toEqual([
      { level: 'info', msg: 'disk pressure over: every path is under the warning threshold again; pool refills create again' },
      { level: 'info', msg: 'disk guard: usage is below the thresholds again, pool refills create again' },
    ]);
  });
});
