/** The watcher's pure rules: which events wake the tick, Docker's `since` for a cursor, the reconnect backoff. */
import { describe, expect, it } from 'vitest';
import type { DockerEvent } from '../../src/docker/engine';
import { isRelevant, sinceParam } from '../../src/watch/event-watcher';

const ev = (action: string, attributes: Record<string, string>, type = 'container'): DockerEvent => ({
  type,
  action,
  id: 'c'.repeat(64),
  attributes,
  timeNano: 1n,
});

describe('event watcher rules', () => {
  it('wakes the tick for ah services, databases and environments only', () => {
    expect(isRelevant(ev('die', { 'ah.service': 's1' }))).toBe(true);
    expect(isRelevant(ev('health_status: unhealthy', { 'ah.service': 's1' }))).toBe(true);
    expect(isRelevant(ev('oom', { 'ah.type': 'database' }))).toBe(true);
    expect(isRelevant(ev('destroy', { 'ah.type': 'environment' }))).toBe(true);
    expect(isRelevant(ev('die', { 'ah.type': 'warm-pool' }))).toBe(false); // the pool's, not the tick's
    expect(isRelevant(ev('die', {}))).toBe(false); // not ah's
    expect(isRelevant(ev('exec_start: sh', { 'ah.service': 's1' }))).toBe(false);
    expect(isRelevant(ev('destroy', { 'ah.service': 's1' }, 'volume'))).toBe(false);
  });

  it("writes a nanosecond cursor as Docker's seconds.nanoseconds", () => {
    expect(sinceParam(1_700_000_000_000_000_123n)).toBe('1700000000.000000123');
    expect(sinceParam(1_700_000_001_500_000_000n)).toBe('1700000001.500000000');
  });
});
