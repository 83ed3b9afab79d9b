/** Disk pressure's rules (src/policy/disk.ts): when the watcher asks GC for a sweep, and how long the pool's block holds. */
import { describe, expect, it } from 'vitest';
import { diskPressureStep, judgeDisk, NO_DISK_PRESSURE, nextPoolHold, withPoolHold, type DiskPressureState } from '../../src/policy/disk';

const GB = 1024 ** 3;
const verdictAt = (...pcts: number[]) =>
  judgeDisk(
    pcts.map((p, i) => ({ path: `/d${i}`, role: 'configured path', totalBytes: 100 * GB, freeBytes: (100 - p) * GB })),
    80,
    90,
  );
const COOL = 60_000;

/** Runs the watcher's rule over usages, one check a second; returns the seconds at which a sweep was asked for. */
function sweepsOver(usages: number[], cooldownMs = COOL): number[] {
  let state: DiskPressureState = NO_DISK_PRESSURE;
  const at: number[] = [];
  usages.forEach((u, second) => {
    const step = diskPressureStep(state, verdictAt(u), second * 1000, cooldownMs);
    state = step.next;
    if (step.sweep) at.push(second);
  });
  return at;
}

describe('disk pressure asks for a sweep', () => {
  it('once when a path crosses the block threshold, not again while it stays there', () => {
    expect(sweepsOver([50, 85, 91, 95, 99, 97])).toEqual([2]);
  });

  it('never while every path is under the block threshold, warning or not', () => {
    expect(sweepsOver([50, 85, 89.9, 80, 10])).toEqual([]);
    expect(
      diskPressureStep(NO_DISK_PRESSURE, judgeDisk([{ path: '/x', role: 'configured path', error: 'gone' }], 80, 90), 0, COOL).sweep,
    ).toBe(false);
  });

  it('again on a new crossing, but at most once per cooldown; a crossing inside the cooldown is served when it ends', () => {
    expect(sweepsOver([91, 85, 91, 85], 1000)).toEqual([0, 2]);
    const flapping = [91, 85, 91, 85, 91, ...Array(60).fill(91)];
    expect(sweepsOver(flapping, 10_000)).toEqual([0, 10]);
  });

  it('any one path at the block is enough', () => {
    expect(diskPressureStep(NO_DISK_PRESSURE, verdictAt(10, 92), 0, COOL).sweep).toBe(true);
  });
});

describe("the pool's hold", () => {
  it('is set at the block, kept while any path is at or above the warning threshold, cleared under it', () => {
    expect(nextPoolHold(false, verdictAt(85))).toBe(false);
    expect(nextPoolHold(false, verdictAt(91))).toBe(true);
    expect(nextPoolHold(true, verdictAt(85))).toBe(true);
    expect(nextPoolHold(true, verdictAt(10, 80))).toBe(true);
    expect(nextPoolHold(true, verdictAt(79.9))).toBe(false);
    // an unmeasured path holds nothing
    expect(nextPoolHold(true, judgeDisk([{ path: '/x', role: 'configured path', error: 'gone' }], 80, 90))).toBe(false);
  });

  it('turns a warning into a block that says why, and leaves an unheld verdict as it is', () => {
    const held = withPoolHold(verdictAt(85), true);
    expect(held.level).toBe('block');
    expect(held.message).toBe(
      'disk usage at /d0 (configured path): 85.0% used, above warning threshold 80%; held since a path reached the block threshold 90%, until every path is under 80%',
    );
    expect(withPoolHold(verdictAt(85), false)).toEqual(verdictAt(85));
    expect(withPoolHold(verdictAt(95), true)).toEqual(verdictAt(95));
  });
});
