/**
 * The GC class registry (src/host/gc/registry.ts): one entry per class, which every user reads. The sweep's list
 * and the activities come from it (the per-class activities that sweeps from before the registry call included),
 * `keeper gc --help` joins its words, the GC look runs only the classes that ask for a sweep, and
 * docs/how-it-works.md describes each class by name. And the image-pull records class on a real SQLite file.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createGcActivities } from '../../src/activities/gc';
import { PER_CLASS_ACTIVITIES } from '../../src/contracts/gc';
import { beginImagePull, deleteImagePull, finishImagePull, imagePulls, recordPullProgress } from '../../src/db/image-pulls';
import { imagePullRecords, planImagePulls, PULL_RECORD_MAX_AGE_SECONDS } from '../../src/host/gc/classes/image-pulls';
import { GC_CLASSES, gcClassNamed, gcClassWords, listGcClasses, sweepOnHost } from '../../src/host/gc/registry';
import { lookForGc } from '../../src/host/gc/look';
import { keysOf } from '../../src/watch/finding';
import { read } from '../helpers/repo-files';
import { memoryHost, type MemoryHost } from './world';

const names = GC_CLASSES.map((c) => c.name);

describe('the GC class registry', () => {
  it('names each class once, lists the classes that run first before the others, and the containers class alone runs first', () => {
    expect(new Set(names).size).toBe(names.length);
    expect(GC_CLASSES.filter((c) => c.runsFirst).map((c) => c.name)).toEqual(['containers']);
    expect(listGcClasses()).toEqual(GC_CLASSES.map((c) => ({ name: c.name, runsFirst: c.runsFirst })));
    expect(gcClassNamed('imagePulls')?.name).toBe('imagePulls');
    expect(gcClassNamed('nonesuch')).toBeUndefined();
  });

  it('keeps a class for every activity that sweeps from before the registry call, and registers those activities', async () => {
    for (const cls of Object.keys(PER_CLASS_ACTIVITIES)) expect(names).toContain(cls);
    const h = memoryHost();
    const activities = createGcActivities(h.deps);
    for (const [cls, activity] of Object.entries(PER_CLASS_ACTIVITIES)) {
      const result = await activities[activity]({ dryRun: true });
      expect(result).toMatchObject({ class: cls, dryRun: true, planned: [] });
    }
  });

  it('runs a class by name, and refuses a name it does not know with a non-retryable failure', async () => {
    const activities = createGcActivities(memoryHost().deps);
    expect(await activities.runGcClass({ cls: 'crashRecords', dryRun: true })).toMatchObject({ class: 'crashRecords', planned: [] });
    await expect(activities.runGcClass({ cls: 'nonesuch', dryRun: true })).rejects.toMatchObject({
      type: 'UnknownGcClass',
      nonRetryable: true,
      message: expect.stringContaining('unknown GC class "nonesuch"'),
    });
    expect(await activities.gcClasses()).toEqual(listGcClasses());
  });

  it("gives `keeper gc` its words, and docs/how-it-works.md's GC section a bullet for each class", () => {
    expect(gcClassWords()).toBe(GC_CLASSES.map((c) => c.words).join(', '));
    const doc = read('docs/how-it-works.md');
    const section = doc.slice(doc.indexOf('## Garbage collection'), doc.indexOf('\n## ', doc.indexOf('## Garbage collection') + 1));
    const described = [...section.matchAll(/^- `(\w+)`:/gm)].map((m) => m[1]);
    expect(described).toEqual(names);
  });

  it('leaves the classes that only trim keeper rows out of the look: an expired image-pull record asks for no sweep', async () => {
    expect(GC_CLASSES.filter((c) => !c.lookRequests).map((c) => c.name)).toEqual(['crashRecords', 'imagePulls', 'orphanRecords']);
    const h = memoryHost({ gcMinAge: '0s' });
    pullRecord(h, 'keeper-test/unpooled:1', 'pulled', h.nowSec() - 3600);
    expect(keysOf(await lookForGc(h.deps))).toEqual([]);
    const swept = await sweepOnHost(h.deps, true);
    expect(swept.map((r) => r.class)).toEqual(names);
    expect(swept.find((r) => r.class === 'imagePulls')?.planned.map((p) => p.name)).toEqual(['keeper-test/unpooled:1']);
  });
});

/** A pull record as the pull writes it: begun by `ownerPid` at `at`, then finished unless it is still `pulling`. */
function pullRecord(h: MemoryHost, image: string, state: 'pulling' | 'pulled' | 'failed', at: number, ownerPid = process.pid): void {
  const attempt = { image, ownerPid, startedAt: at };
  expect(beginImagePull(h.db, attempt, undefined)).toBe(true);
  if (state === 'pulled') finishImagePull(h.db, attempt, { state }, at);
  if (state === 'failed') finishImagePull(h.db, attempt, { state, error: 'refused', nextTryAt: at + 60 }, at);
}

/** A template row pooled under `name` (--pooled-templates) on `image`. */
function template(h: MemoryHost, name: string, image: string): void {
  h.db
    .prepare(
      `INSERT INTO environment_templates (id, name, base_image, memory_mb, cpu_millicores, created_at, updated_at)
       VALUES (?, ?, ?, 64, 100, 1, 1)`,
    )
    .run(`tmpl_${name}`, name, image);
}

describe('image-pull records (imagePulls)', () => {
  it('removes the records of images no pooled template uses, and finished ones over 30 days old; keeps a pull under way and what is recent', async () => {
    const h = memoryHost({ pooledTemplates: 'kp-pooled', gcMinAge: '10m' });
    template(h, 'kp-pooled', 'node:pooled');
    template(h, 'kp-unpooled', 'python:unpooled');
    const now = h.nowSec();
    const old = now - PULL_RECORD_MAX_AGE_SECONDS - 60;
    const dead = spawnSync('true').pid!;
    pullRecord(h, 'python:unpooled', 'pulled', now - 3600); // its template is no longer pooled
    pullRecord(h, 'gone:1', 'failed', now - 3600); // no template at all
    pullRecord(h, 'stale:1', 'pulling', now - 3600, dead); // a pull its dead process left, of an image no template uses
    pullRecord(h, 'node:pooled', 'pulled', old); // the pooled template's, pulled long ago
    pullRecord(h, 'running:1', 'pulling', now - 60); // under way in a live process (this one): never touched
    pullRecord(h, 'just-unpooled:1', 'pulled', now - 60); // younger than --gc-min-age
    const dry = await imagePullRecords.run(h.deps, { dryRun: true });
    expect(Object.fromEntries(dry.planned.map((p) => [p.name, p.reason]))).toEqual({
      'python:unpooled': 'no pooled template uses python:unpooled',
      'gone:1': 'no pooled template uses gone:1',
      'stale:1': 'no pooled template uses stale:1',
      'node:pooled': 'pulled over 30 days ago',
    });
    expect(dry.kept).toEqual({ 'in-use': 1, young: 1 });
    expect(imagePulls(h.db)).toHaveLength(6);

    const real = await imagePullRecords.run(h.deps, { dryRun: false });
    expect(real.removed.map((r) => r.name).sort()).toEqual(['gone:1', 'node:pooled', 'python:unpooled', 'stale:1']);
    expect(
      imagePulls(h.db)
        .map((r) => r.image)
        .sort(),
    ).toEqual(['just-unpooled:1', 'running:1']);
  });

  it('keeps a pooled image recently pulled or failed, and a pull under way of an image no template uses', () => {
    const now = 1_800_000_000;
    const row = (image: string, state: 'pulling' | 'pulled' | 'failed', updatedAt: number, ownerAlive = false) => ({
      image,
      state,
      attempts: 1,
      startedAt: updatedAt,
      finishedAt: state === 'pulling' ? null : updatedAt,
      nextTryAt: null,
      error: '',
      progress: '',
      ownerPid: 1,
      updatedAt,
      ownerAlive,
    });
    const plan = planImagePulls(
      [
        row('pooled:1', 'pulled', now - 29 * 86_400),
        row('pooled:2', 'failed', now - 60),
        row('pooled:3', 'pulling', now - 60 * 86_400), // a pull its dead owner left: the next refill takes it over
        row('unpooled:1', 'pulling', now - 30, true),
        row('unpooled:2', 'pulling', now - 2 * 3600, true), // past the pull timeout: its owner gave up on it
      ],
      { now, pooledImages: new Set(['pooled:1', 'pooled:2', 'pooled:3']), minAgeSeconds: 0 },
    );
    expect(plan.remove.map((r) => r.item)).toEqual([
      { name: 'unpooled:2', ageSeconds: 7200, reason: 'no pooled template uses unpooled:2' },
    ]);
    expect(plan.kept).toEqual({ 'within-limits': 3, 'in-use': 1 });
  });

  it('deletes a record only if it is still the one judged: a pull that began since keeps its row', () => {
    const h = memoryHost({ gcMinAge: '0s' });
    pullRecord(h, 'gone:1', 'failed', h.nowSec() - 3600);
    const judged = imagePulls(h.db)[0];
    // Between the sweep's look and its removal, a pull of the image begins again (its template pooled meanwhile).
    const again = { image: 'gone:1', ownerPid: process.pid, startedAt: h.nowSec() };
    expect(beginImagePull(h.db, again, judged)).toBe(true);
    recordPullProgress(h.db, again, 'downloading', h.nowSec());
    expect(deleteImagePull(h.db, judged)).toBe(false);
    expect(imagePulls(h.db).map((r) => r.state)).toEqual(['pulling']);
    expect(deleteImagePull(h.db, imagePulls(h.db)[0])).toBe(true);
    expect(imagePulls(h.db)).toEqual([]);
  });
});
