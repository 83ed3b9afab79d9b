/**
 * gcSweep with stub activities on the time-skipping server: the sweep runs the classes the gcClasses activity
 * lists, each through runGcClass: those that run first, then the others with the containers the first took away;
 * a dry run plans and records nothing; a class whose activity fails (a name the worker does not know included)
 * is reported with its error while the others still run; a summary the DB cannot take does not fail the sweep.
 * Sweeps started before the class registry (one activity per class) are proven by the recorded histories
 * (replay.test.ts).
 */
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it, vi } from 'vitest';
import type { Activities } from '../../src/loops/registry';
import type { GcClass, GcClassListed, GcClassResult, GcClassRun, GcItem } from '../../src/contracts/gc';
import { listGcClasses } from '../../src/host/gc/registry';
import { gcSweep } from '../../src/workflows';
import { executeWithStubs, stubWorkerEnvForFile } from './helpers';

const env = stubWorkerEnvForFile();

const item = (name: string, id?: string): GcItem => ({ name, ...(id ? { id } : {}), ageSeconds: 900, reason: 'orphan' });

/** One class's result: in a dry run `items` are planned, in a real one removed. */
function classResult(cls: GcClass, dryRun: boolean, items: GcItem[], extra: Partial<GcClassResult> = {}): GcClassResult {
  return { class: cls, dryRun, planned: dryRun ? items : [], removed: dryRun ? [] : items, failed: [], skipped: [], kept: {}, ...extra };
}

/**
 * The class list (default: the registry's), runGcClass answering `results[class]` (default: nothing found) and
 * logging each class's start and end, and recordGcSweep. `fail` makes a class (or recordGcSweep) throw on every attempt.
 */
function gcStubs(
  results: Partial<Record<GcClass, (dryRun: boolean) => GcClassResult>> = {},
  fail: Partial<Record<GcClass | 'recordGcSweep', string>> = {},
  listed: GcClassListed[] = listGcClasses(),
) {
  const log: string[] = [];
  const stubs = {
    gcClasses: vi.fn(async () => listed),
    runGcClass: vi.fn(async ({ cls, dryRun }: GcClassRun): Promise<GcClassResult> => {
      log.push(`start ${cls}`);
      if (fail[cls]) throw ApplicationFailure.create({ message: fail[cls] });
      const r = results[cls]?.(dryRun) ?? classResult(cls, dryRun, []);
      log.push(`end ${cls}`);
      return r;
    }),
    recordGcSweep: vi.fn<Activities['recordGcSweep']>(async () => {
      if (fail.recordGcSweep) throw new Error(fail.recordGcSweep);
    }),
  } satisfies Pick<Activities, 'gcClasses' | 'runGcClass' | 'recordGcSweep'>;
  const inputOf = (cls: GcClass) => stubs.runGcClass.mock.calls.filter(([i]) => i.cls === cls).map(([i]) => i);
  return { stubs, log, inputOf };
}

const twoContainers = (dryRun: boolean) => classResult('containers', dryRun, [item('ah-a', 'c1'), item('ah-b', 'c2'), item('no-id')]);
const registryNames = listGcClasses().map((c) => c.name);

describe('gcSweep', () => {
  it('runs the listed classes, containers first, the others with the containers it removed, and records the summary', async () => {
    const { stubs, log, inputOf } = gcStubs({ containers: twoContainers, volumes: (d) => classResult('volumes', d, [item('ah-db-x')]) });
    const { result } = await executeWithStubs(env, stubs, gcSweep);
    expect(stubs.gcClasses).toHaveBeenCalledTimes(1);
    expect(log.slice(0, 2)).toEqual(['start containers', 'end containers']);
    expect(log).toHaveLength(2 * registryNames.length);
    expect(inputOf('containers')).toEqual([{ cls: 'containers', dryRun: false }]);
    for (const cls of registryNames.filter((c) => c !== 'containers'))
      expect(inputOf(cls)).toEqual([{ cls, dryRun: false, goneContainers: ['c1', 'c2'] }]);
    expect(result.classes.map((c) => c.class)).toEqual(registryNames);
    expect(result.totals).toEqual({ planned: 4, removed: 4, failed: 0, skipped: 0, classErrors: 0 });
    expect(stubs.recordGcSweep.mock.calls).toEqual([[{ summary: result.summary, totals: result.totals }]]);
  });

  it('runs whatever the list names, in its order: a class added to the registry needs no workflow change', async () => {
    const listed = [
      { name: 'later', runsFirst: false },
      { name: 'first', runsFirst: true },
      { name: 'brandNew', runsFirst: false },
    ];
    const { stubs, log, inputOf } = gcStubs(
      { first: (d) => classResult('first', d, [item('x', 'gone-1')]), brandNew: (d) => classResult('brandNew', d, [item('row-1')]) },
      {},
      listed,
    );
    const { result } = await executeWithStubs(env, stubs, gcSweep);
    expect(log.slice(0, 2)).toEqual(['start first', 'end first']);
    expect(inputOf('brandNew')).toEqual([{ cls: 'brandNew', dryRun: false, goneContainers: ['gone-1'] }]);
    expect(result.classes.map((c) => c.class)).toEqual(['later', 'first', 'brandNew']);
    expect(result.totals).toMatchObject({ removed: 2, classErrors: 0 });
  });

  it('in a dry run passes the containers it would remove on, plans everything and records nothing', async () => {
    const { stubs, inputOf } = gcStubs({ containers: twoContainers, images: (d) => classResult('images', d, [item('sha256:1', 'i1')]) });
    const { result } = await executeWithStubs(env, stubs, gcSweep, { dryRun: true });
    expect(inputOf('containers')).toEqual([{ cls: 'containers', dryRun: true }]);
    expect(inputOf('images')).toEqual([{ cls: 'images', dryRun: true, goneContainers: ['c1', 'c2'] }]);
    expect(result.dryRun).toBe(true);
    expect(result.summary.find((s) => s.class === 'containers')).toEqual({
      class: 'containers',
      planned: 3,
      removed: 0,
      failed: 0,
      skipped: 0,
    });
    expect(result.totals).toEqual({ planned: 4, removed: 0, failed: 0, skipped: 0, classErrors: 0 });
    expect(stubs.recordGcSweep).not.toHaveBeenCalled();
  });

  it('reports a class whose activity fails with its error (after its retry); the other classes still run', async () => {
    const { stubs, inputOf } = gcStubs(
      { snapshots: (d) => classResult('snapshots', d, [item('snap-1')]) },
      { volumes: 'volume list exploded' },
    );
    const { result } = await executeWithStubs(env, stubs, gcSweep);
    expect(inputOf('volumes')).toHaveLength(2); // maximumAttempts 2
    expect(result.summary.find((s) => s.class === 'volumes')).toEqual({
      class: 'volumes',
      planned: 0,
      removed: 0,
      failed: 0,
      skipped: 0,
      error: 'volume list exploded',
    });
    expect(result.summary.find((s) => s.class === 'snapshots')).toMatchObject({ removed: 1 });
    expect(result.totals).toMatchObject({ removed: 1, classErrors: 1 });
    expect(stubs.recordGcSweep).toHaveBeenCalledTimes(1);
  });

  it('reports a class the worker does not know (a non-retryable failure) once, and sweeps the rest', async () => {
    const listed = [...listGcClasses(), { name: 'fromANewerBuild', runsFirst: false }];
    const { stubs, inputOf } = gcStubs({ containers: twoContainers }, {}, listed);
    stubs.runGcClass.mockImplementation(async ({ cls, dryRun }) => {
      if (cls === 'fromANewerBuild') throw ApplicationFailure.create({ message: 'unknown GC class "fromANewerBuild"', nonRetryable: true });
      return cls === 'containers' ? twoContainers(dryRun) : classResult(cls, dryRun, []);
    });
    const { result } = await executeWithStubs(env, stubs, gcSweep);
    expect(inputOf('fromANewerBuild')).toHaveLength(1);
    expect(result.summary.at(-1)).toMatchObject({ class: 'fromANewerBuild', error: 'unknown GC class "fromANewerBuild"' });
    expect(result.totals).toMatchObject({ removed: 3, classErrors: 1 });
  });

  it('reports the crashRecords class failing (a DB that cannot be read); every other class still runs and the summary is recorded', async () => {
    const { stubs, log, inputOf } = gcStubs(
      { containers: twoContainers, snapshots: (d) => classResult('snapshots', d, [item('snap-1')]) },
      { crashRecords: 'SQLITE_CORRUPT: database disk image is malformed' },
    );
    const { result } = await executeWithStubs(env, stubs, gcSweep);
    expect(inputOf('crashRecords')).toHaveLength(2); // maximumAttempts 2
    expect(result.summary.find((s) => s.class === 'crashRecords')).toEqual({
      class: 'crashRecords',
      planned: 0,
      removed: 0,
      failed: 0,
      skipped: 0,
      error: 'SQLITE_CORRUPT: database disk image is malformed',
    });
    expect(log.filter((l) => l.startsWith('end '))).toHaveLength(registryNames.length - 1);
    expect(result.totals).toEqual({ planned: 4, removed: 4, failed: 0, skipped: 0, classErrors: 1 });
    expect(stubs.recordGcSweep).toHaveBeenCalledTimes(1);
  });

  it('still runs every other class, with nothing gone, when the containers class fails', async () => {
    const { stubs, inputOf } = gcStubs({}, { containers: 'engine down' });
    const { result } = await executeWithStubs(env, stubs, gcSweep);
    expect(result.summary[0]).toMatchObject({ class: 'containers', error: 'engine down' });
    expect(inputOf('networks')).toEqual([{ cls: 'networks', dryRun: false, goneContainers: [] }]);
    expect(result.totals.classErrors).toBe(1);
  });

  it('passes on a class that reports its own error, and counts failures and skips', async () => {
    const networks = (d: boolean) =>
      classResult('networks', d, [item('ah-tenant-a')], {
        failed: [{ name: 'ah-tenant-b', error: 'in use' }],
        skipped: [{ name: 'ah-tenant-c', error: '500' }],
      });
    const { stubs } = gcStubs({ networks, buildDirs: (d) => classResult('buildDirs', d, [], { error: 'EACCES' }) });
    const { result } = await executeWithStubs(env, stubs, gcSweep);
    expect(result.summary.find((s) => s.class === 'networks')).toEqual({
      class: 'networks',
      planned: 2,
      removed: 1,
      failed: 1,
      skipped: 1,
    });
    expect(result.totals).toEqual({ planned: 2, removed: 1, failed: 1, skipped: 1, classErrors: 1 });
  });

  it('does not fail when recordGcSweep fails: the sweep is done', async () => {
    const { stubs } = gcStubs({ containers: twoContainers }, { recordGcSweep: 'database is locked' });
    const { result } = await executeWithStubs(env, stubs, gcSweep);
    expect(stubs.recordGcSweep).toHaveBeenCalledTimes(2);
    expect(result.totals).toMatchObject({ removed: 3, classErrors: 0 });
  });
});
