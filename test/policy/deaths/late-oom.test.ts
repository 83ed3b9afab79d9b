import { describe, expect, it } from 'vitest';
import { oomConfirmed } from '../../../src/policy/deaths/late-oom';
import { T } from './runs';

describe('oomConfirmed: which recorded deaths a late oom event shows were OOM kills', () => {
  const deaths = [
    { id: 1, containerId: 'aaaaaaaaaaaa', diedAtMs: T },
    { id: 2, containerId: 'aaaaaaaaaaaa', diedAtMs: T + 4_000 },
    { id: 3, containerId: 'bbbbbbbbbbbb', diedAtMs: T },
  ];
  it('gives each event to the nearest death of its container it can belong to, one death per event', () => {
    expect(oomConfirmed(deaths, [{ containerId: 'aaaaaaaaaaaa' + 'f'.repeat(52), atMs: T + 4_300 }])).toEqual([2]);
    expect(
      oomConfirmed(deaths, [
        { containerId: 'aaaaaaaaaaaaffff', atMs: T + 100 },
        { containerId: 'aaaaaaaaaaaaffff', atMs: T + 4_100 },
      ]),
    ).toEqual([1, 2]);
  });
  it('confirms nothing for an event of another container, long after the death, or well before it', () => {
    expect(oomConfirmed(deaths, [{ containerId: 'cccccccccccc', atMs: T }])).toEqual([]);
    expect(oomConfirmed(deaths.slice(2), [{ containerId: 'bbbbbbbbbbbb', atMs: T + 60_000 }])).toEqual([]);
    expect(oomConfirmed(deaths.slice(2), [{ containerId: 'bbbbbbbbbbbb', atMs: T - 10_000 }])).toEqual([]);
  });
});
