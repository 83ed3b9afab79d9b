import { describe, expect, it } from 'vitest';
import { exponentialBackoff } from '../../src/policy/backoff';

describe('exponentialBackoff', () => {
  it('waits the first delay after one failure (or none), doubles it per further failure, up to the cap', () => {
    expect([0, 1, 2, 3, 4, 5, 10].map((n) => exponentialBackoff(n, 250, 1500))).toEqual([250, 250, 500, 1000, 1500, 1500, 1500]);
  });

  it('stays at the cap, a finite number, however long the failures go on', () => {
    expect([60, 1_000, 1e9, Number.MAX_SAFE_INTEGER].map((n) => exponentialBackoff(n, 60, 3600))).toEqual([3600, 3600, 3600, 3600]);
    expect(exponentialBackoff(10_000, 0, 3600)).toBe(0);
  });
});
