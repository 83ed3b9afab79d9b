/**
 * gcSweep with stub activities on the time-skipping server: containers first, then the other classes with the
 * containers this sweep took away; a dry run plans and records nothing; a class whose activity fails is
 * reported with its error while the others still run (crashRecords too); a summary the DB cannot take does not
 * fail the sweep.
 */
import { describe, expect, it, vi } from 'vitest';
import type { Activities } from '../../src/activities';
import type { GcClass, GcClassInput, GcClassResult, GcItem } from '../../src/contracts/gc';
import { gcSweep } from '../../src/workflows';
import { executeWithStubs, stubWorkerEnvForFile } from './helpers';

const env = stubWorkerEnvForFile();

type ClassActivity =
  | 'removeOrphanContainers'
  | 'removeOrphanVolumes'
  | 'removeEmptyTenantNetworks'
  | 'removeDanglingImages'
  | 'removeOldBuildDirs'
  | 'removeExpiredSnapshots'
  | 'removeOldCrashRecords'
  | 'removeBuildImages';
const CLASS_OF: Record<ClassActivity, GcClass> = {
  removeOrphanContainers: 'containers',
  removeOrphanVolumes: 'volumes',
  removeEmptyTenantNetworks: 'networks',
  removeDanglingImages: 'images',
  removeOldBuildDirs: 'buildDirs',
  removeExpiredSnapshots: 'snapshots',
  removeOldCrashRecords: 'crashRecords',
  removeBuildImages: 'buildImages',
};

const item = (name: string, id?: string): GcItem => ({ name, ...(id ? { id } : {}), ageSeconds: 900, reason: 'orphan' });

/** One class's result: in a dry run `items` are planned, in a real one removed. */
function classResult(cls: GcClass, dryRun: boolean, items: GcItem[], extra: Partial<GcClassResult> = {}): GcClassResult {
  return { class: cls, dryRun, planned: dryRun ? items : [], removed: dryRun ? [] : items, failed: [], skipped: [], kept: {}, ...extra };
}

/**
 * Every class activity, answering `results[class]` (default: nothing found) and logging its start and end, and
 * recordGcSweep. `fail` makes that activity throw on every attempt.
 */
function gcStubs(
  results: Partial<Record<GcClass, (dryRun: boolean) => GcClassResult>> = {},
  fail: Partial<Record<ClassActivity | 'recordGcSweep', string>> = {},
) {
  const log: string[] = [];
  const classStub = (name: ClassActivity) =>
    vi.fn(async (input: GcClassInput): Promise<GcClassResult> => {
      const cls = CLASS_OF[name];
      log.push(`start ${cls}`);
      if (fail[name]) throw new Error(fail[name]);
      const r = results[cls]?.(input.dryRun) ?? classResult(cls, input.dryRun, []);
      log.push(`end ${cls}`);
      return r;
    });
  const stubs = {
    removeOrphanContainers: classStub('removeOrphanContainers'),
    removeOrphanVolumes: classStub('removeOrphanVolumes'),
    removeEmptyTenantNetworks: classStub('removeEmptyTenantNetworks'),
    removeDanglingImages: classStub('removeDanglingImages'),
    removeOldBuildDirs: classStub('removeOldBuildDirs'),
    removeExpiredSnapshots: classStub('removeExpiredSnapshots'),
    removeOldCrashRecords: classStub('removeOldCrashRecords'),
    removeBuildImages: classStub('removeBuildImages'),
    recordGcSweep: vi.fn<Activities['recordGcSweep']>(async () => {
      if (fail.recordGcSweep) throw new Error(fail.recordGcSweep);
    }),
  } satisfies Pick<Activities, ClassActivity | 'recordGcSweep'>;
  return { stubs, log };
}

const twoContainers = (dryRun: boolean) => classResult('containers', dryRun, [item('ah-a', 'c1'), item('ah-b', 'c2'), item('no-id')]);

describe('gcSweep', () => {
  it('runs containers first, then the other classes with the containers it removed, and records the summary', async () => {
    const { stubs, log } = gcStubs({ containers: twoContainers, volumes: (d) => classResult('volumes', d, [item('ah-db-x')]) });
    const { result } = await executeWithStubs(env, stubs, gcSweep);
    expect(log.slice(0, 2)).toEqual(['start containers', 'end containers']);
    expect(log).toHaveLength(16);
    const gone = { dryRun: false, goneContainers: ['c1', 'c2'] };
    for (const s of [
      stubs.removeOrphanVolumes,
      stubs.removeEmptyTenantNetworks,
      stubs.removeDanglingImages,
      stubs.removeExpiredSnapshots,
      stubs.removeBuildImages,
    ]) {
      expect(s.mock.calls).toEqual([[gone]]);
    }
    expect(stubs.removeOrphanContainers.mock.calls).toEqual([[{ dryRun: false }]]);
    expect(stubs.removeOldBuildDirs.mock.calls).toEqual([[{ dryRun: false }]]);
    expect(stubs.removeOldCrashRecords.mock.calls).toEqual([[{ dryRun: false }]]);
    expect(result.classes.map((c) => c.class)).toEqual([
      'containers',
      'volumes',
      'networks',
      'images',
      'buildDirs',
      'snapshots',
      'crashRecords',
      'buildImages',
    ]);
    expect(result.totals).toEqual({ planned: 4, removed: 4, failed: 0, skipped: 0, classErrors: 0 });
    expect(stubs.recordGcSweep.mock.calls).toEqual([[{ summary: result.summary, totals: result.totals }]]);
  });

  it('in a dry run passes the containers it would remove on, plans everything and records nothing', async () => {
    const { stubs } = gcStubs({ containers: twoContainers, images: (d) => classResult('images', d, [item('sha256:1', 'i1')]) });
    const { result } = await executeWithStubs(env, stubs, gcSweep, { dryRun: true });
    expect(stubs.removeOrphanContainers.mock.calls).toEqual([[{ dryRun: true }]]);
    expect(stubs.removeDanglingImages.mock.calls).toEqual([[{ dryRun: true, goneContainers: ['c1', 'c2'] }]]);
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
    const { stubs } = gcStubs(
      { snapshots: (d) => classResult('snapshots', d, [item('snap-1')]) },
      { removeOrphanVolumes: 'volume list exploded' },
    );
    const { result } = await executeWithStubs(env, stubs, gcSweep);
    expect(stubs.removeOrphanVolumes).toHaveBeenCalledTimes(2); // maximumAttempts 2
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

  it('runs the crashRecords class, dry and real, and counts what it removes', async () => {
    const records = (d: boolean) => classResult('crashRecords', d, [item('svc-1#3'), item('svc-1#4')]);
    const dry = gcStubs({ crashRecords: records });
    const planned = await executeWithStubs(env, dry.stubs, gcSweep, { dryRun: true });
    expect(dry.stubs.removeOldCrashRecords.mock.calls).toEqual([[{ dryRun: true }]]);
    expect(planned.result.summary.find((s) => s.class === 'crashRecords')).toEqual({
      class: 'crashRecords',
      planned: 2,
      removed: 0,
      failed: 0,
      skipped: 0,
    });
    const real = gcStubs({ crashRecords: records });
    const { result } = await executeWithStubs(env, real.stubs, gcSweep);
    expect(result.summary.find((s) => s.class === 'crashRecords')).toEqual({
      class: 'crashRecords',
      planned: 2,
      removed: 2,
      failed: 0,
      skipped: 0,
    });
    expect(result.totals).toMatchObject({ removed: 2, classErrors: 0 });
  });

  it('reports the crashRecords class failing (a DB that cannot be read); every other class still runs and the summary is recorded', async () => {
    const { stubs, log } = gcStubs(
      { containers: twoContainers, snapshots: (d) => classResult('snapshots', d, [item('snap-1')]) },
      { removeOldCrashRecords: 'SQLITE_CORRUPT: database disk image is malformed' },
    );
    const { result } = await executeWithStubs(env, stubs, gcSweep);
    expect(stubs.removeOldCrashRecords).toHaveBeenCalledTimes(2); // maximumAttempts 2
    expect(result.summary.find((s) => s.class === 'crashRecords')).toEqual({
      class: 'crashRecords',
      planned: 0,
      removed: 0,
      failed: 0,
      skipped: 0,
      error: 'SQLITE_CORRUPT: database disk image is malformed',
    });
    expect(log.filter((l) => l.startsWith('end '))).toHaveLength(7);
    expect(result.totals).toEqual({ planned: 4, removed: 4, failed: 0, skipped: 0, classErrors: 1 });
    expect(stubs.recordGcSweep).toHaveBeenCalledTimes(1);
  });

  it('still runs every other class, with nothing gone, when the containers class fails', async () => {
    const { stubs } = gcStubs({}, { removeOrphanContainers: 'engine down' });
    const { result } = await executeWithStubs(env, stubs, gcSweep);
    expect(result.summary[0]).toMatchObject({ class: 'containers', error: 'engine down' });
    expect(stubs.removeEmptyTenantNetworks.mock.calls).toEqual([[{ dryRun: false, goneContainers: [] }]]);
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
