/** When a look requests a run (src/watch/request-rules.ts): at once for something new, then only as runs fail to do it. */
import { describe, expect, it } from 'vitest';
import { REQUEST_RULES, decideRequest, type RequestState } from '../../src/watch/request-rules';

const T = 1_000_000;

describe('decideRequest', () => {
  it('requests at once for something new, and remembers what it requested', () => {
    expect(decideRequest(undefined, { keys: [], nowMs: T })).toEqual({ request: false, next: undefined });
    const d = decideRequest(undefined, { keys: ['crash:s1@exited/0'], nowMs: T });
    expect(d).toEqual({ request: true, next: { keys: ['crash:s1@exited/0'], requestedAtMs: T, undone: 0 } });
  });

  it('leaves to the event path what it covers, as if requested', () => {
    const d = decideRequest(undefined, { keys: ['crash:s1@running/3'], nowMs: T, covered: true });
    expect(d.request).toBe(false);
    expect(d.next).toEqual({ keys: ['crash:s1@running/3'], requestedAtMs: T, undone: 0, leftToEventPath: true });
  });

  it('requests at once what it left to the event path once the event path no longer covers it', () => {
    const prev: RequestState = { keys: ['crash:s1@running/3'], requestedAtMs: T, undone: 0, leftToEventPath: true };
    expect(decideRequest(prev, { keys: ['crash:s1@running/3'], nowMs: T + 1_000, covered: true }).request).toBe(false);
    expect(decideRequest(prev, { keys: ['crash:s1@running/3'], nowMs: T + 1_000 }).request).toBe(true);
  });

  it('requests the same things again only when the run requested is overdue', () => {
    const prev: RequestState = { keys: ['lease-expired:e1'], requestedAtMs: T, undone: 0 };
    const look = (nowMs: number) => decideRequest(prev, { keys: ['lease-expired:e1'], nowMs, lastRunFinishedAtMs: T - 1 });
    expect(look(T + REQUEST_RULES.runOverdueMs - 1).request).toBe(false);
    expect(look(T + REQUEST_RULES.runOverdueMs)).toMatchObject({ request: true, next: { requestedAtMs: T + REQUEST_RULES.runOverdueMs } });
  });

  it('requests again after a run that left them undone, with a backoff that doubles up to its cap', () => {
    let prev: RequestState = { keys: ['circuit-running:s1'], requestedAtMs: T, undone: 0 };
    const requests: number[] = [];
    for (let now = T; now < T + 60 * 60_000; now += 10_000) {
      const d = decideRequest(prev, { keys: ['circuit-running:s1'], nowMs: now, lastRunFinishedAtMs: prev.requestedAtMs + 1 });
      if (d.request) requests.push(now - prev.requestedAtMs);
      prev = d.next!;
    }
    expect(requests.slice(0, 4)).toEqual([30_000, 60_000, 120_000, 240_000]);
    expect(new Set(requests.slice(4))).toEqual(new Set([REQUEST_RULES.maxBackoffMs]));
  });

  it('requests at once when something new joins what it waits on, and not when something is done', () => {
    const prev: RequestState = { keys: ['a', 'b'], requestedAtMs: T, undone: 0 };
    expect(decideRequest(prev, { keys: ['b'], nowMs: T + 10_000 }).request).toBe(false);
    expect(decideRequest(prev, { keys: ['b', 'c'], nowMs: T + 10_000 }).request).toBe(true);
  });
});
