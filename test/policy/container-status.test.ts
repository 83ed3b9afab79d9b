import { describe, expect, it } from 'vitest';
import { isUnhealthy, mayHaveChangedSince, statusAge, statusAgeLowerBound } from '../../src/policy/container-status';
import { humanDuration } from '../helpers/memory-engine';

const H = 3600;
const D = 24 * H;

describe('container status text: each wording is the range of durations Docker words that way', () => {
  it.each([
    // seconds truncate
    ['Up Less than a second', 0, 1],
    ['Up 1 second', 1, 2],
    ['Exited (1) 5 seconds ago', 5, 6],
    ['Restarting (1) Less than a second ago', 0, 1],
    // minutes truncate
    ['Up About a minute', 60, 120],
    ['Up 3 minutes (unhealthy)', 180, 240],
    ['Up 59 minutes', 59 * 60, 60 * 60],
    // from an hour on, hours round half up
    ['Exited (137) About an hour ago', H, 1.5 * H],
    ['Up 2 hours', 1.5 * H, 2.5 * H],
    ['Up 47 hours (healthy)', 46.5 * H, 47.5 * H],
    // days, weeks and months are whole parts of the rounded hours
    ['Up 2 days', 47.5 * H, 71.5 * H],
    ['Up 4 days (healthy)', 4 * D - 0.5 * H, 5 * D - 0.5 * H],
    ['Up 13 days', 13 * D - 0.5 * H, 14 * D - 0.5 * H],
    ['Up 2 weeks', 14 * D - 0.5 * H, 21 * D - 0.5 * H],
    ['Up 8 weeks', 56 * D - 0.5 * H, 60 * D - 0.5 * H],
    ['Up 2 months', 60 * D - 0.5 * H, 90 * D - 0.5 * H],
    ['Up 24 months', 720 * D - 0.5 * H, 730 * D - 0.5 * H],
    // years truncate the hours
    ['Up 2 years', 730 * D, 1095 * D],
    ['Up 3 minutes (Paused)', 180, 240],
    ['Up 5 hours (health: starting)', 4.5 * H, 5.5 * H],
  ])('%s: [%s s, %s s)', (text, min, max) => {
    expect(statusAge(text)).toEqual({ minSec: min, maxSec: max });
    expect(statusAgeLowerBound(text)).toBe(min);
  });

  it.each(['Created', 'Dead', 'Removal In Progress', '', 'Up forever'])('%j carries no duration', (text) => {
    expect(statusAge(text)).toBeNull();
  });

  // Every duration from 0 to 3 years, at a grid fine at each band's edges: Docker's wording of it (go-units'
  // HumanDuration, ported line for line in the in-memory engine) is read back as a range that holds it.
  it('reads back every duration Docker words, in every band, as a range that holds it', () => {
    const edges = [0, 1, 2, 59, 60, 61, 119, 120, 3599, 3600, 5399, 5400, 9000, 47.5 * H, 71.5 * H, 335.5 * H, 1439.5 * H];
    const samples = new Set<number>(edges.flatMap((e) => [e - 0.001, e, e + 0.001]).filter((e) => e >= 0));
    for (let d = 0; d < 3 * 365 * D; d += d < 2 * H ? 7 : d < 3 * D ? 611 : 5 * H + 17) samples.add(d);
    for (const d of samples) {
      const range = statusAge(`Up ${humanDuration(d)}`);
      expect(range, `${d} s worded ${humanDuration(d)}`).not.toBeNull();
      expect(
        d >= range!.minSec && d < range!.maxSec,
        `${d} s worded "${humanDuration(d)}" read as [${range!.minSec}, ${range!.maxSec})`,
      ).toBe(true);
    }
  });

  it('sees unhealthy', () => {
    expect(isUnhealthy('Up 3 minutes (unhealthy)')).toBe(true);
    expect(isUnhealthy('Up 3 minutes (healthy)')).toBe(false);
  });
});

describe('mayHaveChangedSince', () => {
  it('tells whether a container may have restarted since the last look', () => {
    expect(mayHaveChangedSince('Up 5 minutes', 1000 - 30, 1000)).toBe(false);
    expect(mayHaveChangedSince('Up 10 seconds', 1000 - 30, 1000)).toBe(true);
    expect(mayHaveChangedSince('Created', 1000 - 30, 1000)).toBe(true);
  });

  // The operator's case: keeper looked at T, the container restarted at T + 20 min, keeper came back at T + 2 h. Docker
  // says "Up 2 hours" (1 h 40 min, rounded): read as exactly 2 hours, the start would fall before keeper's look.
  it('does not trust a rounded hour: a restart 20 minutes into a 2-hour absence may have happened', () => {
    const lookedAt = 1_000_000;
    const now = lookedAt + 2 * H;
    const upSec = now - (lookedAt + 20 * 60);
    expect(humanDuration(upSec)).toBe('2 hours');
    expect(mayHaveChangedSince(`Up ${humanDuration(upSec)}`, lookedAt, now)).toBe(true);
  });

  it('still trusts a wording whose shortest duration puts the start before the look', () => {
    const lookedAt = 1_000_000;
    expect(mayHaveChangedSince('Up 3 hours', lookedAt, lookedAt + 2 * H)).toBe(false);
    expect(mayHaveChangedSince('Up 2 days', lookedAt, lookedAt + 2 * H)).toBe(false);
  });
});
