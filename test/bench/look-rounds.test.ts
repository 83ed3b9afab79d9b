/**
 * bench:looks prices a round's one container list by how often rounds come: looks due at the same moment share a
 * round (src/watch/look-runner.ts, whose own test shows the sharing), so the list is made once per distinct moment.
 */
import { describe, expect, it } from 'vitest';
import { meanRoundIntervalMs } from '../../bench/looks-cost';

describe('meanRoundIntervalMs', () => {
  it('counts the distinct moments of the looks’ grids', () => {
    expect(meanRoundIntervalMs([10_000, 15_000, 60_000])).toBe(7_500); // 8 rounds a minute, not 11
    expect(meanRoundIntervalMs([10_000])).toBe(10_000);
    expect(meanRoundIntervalMs([10_000, 20_000])).toBe(10_000);
    expect(meanRoundIntervalMs([7_000, 11_000])).toBe(77_000 / 17);
  });
});
