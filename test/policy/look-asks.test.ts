/** When a local look asks for a run (src/policy/look-asks.ts): at once for something new, then only as runs fail to do it. */
import { describe, expect, it } from 'vitest';
import { ASK_RULES, decideAsk, type AskState } from '../../src/policy/look-asks';

const T = 1_000_000;

describe('decideAsk', () => {
  it('asks at once for something new, and remembers what it asked', () => {
    expect(decideAsk(undefined, { items: [], nowMs: T })).toEqual({ ask: false, next: undefined });
    const d = decideAsk(undefined, { items: ['crash:s1@exited/0'], nowMs: T });
    expect(d).toEqual({ ask: true, next: { items: ['crash:s1@exited/0'], askedAtMs: T, undone: 0 } });
  });

  it('leaves to the event path what it has in hand, as if asked', () => {
    const d = decideAsk(undefined, { items: ['crash:s1@running/3'], nowMs: T, inHand: true });
    expect(d.ask).toBe(false);
    expect(d.next?.askedAtMs).toBe(T);
  });

  it('asks again for the same things only when the run asked for is overdue', () => {
    const prev: AskState = { items: ['lease-expired:e1'], askedAtMs: T, undone: 0 };
    const look = (nowMs: number) => decideAsk(prev, { items: ['lease-expired:e1'], nowMs, lastRunFinishedAtMs: T - 1 });
    expect(look(T + ASK_RULES.runOverdueMs - 1).ask).toBe(false);
    expect(look(T + ASK_RULES.runOverdueMs)).toMatchObject({ ask: true, next: { askedAtMs: T + ASK_RULES.runOverdueMs } });
  });

  it('asks again after a run that left them undone, with a backoff that doubles up to its cap', () => {
    let prev: AskState = { items: ['circuit-running:s1'], askedAtMs: T, undone: 0 };
    const asks: number[] = [];
    for (let now = T; now < T + 60 * 60_000; now += 10_000) {
      const d = decideAsk(prev, { items: ['circuit-running:s1'], nowMs: now, lastRunFinishedAtMs: prev.askedAtMs + 1 });
      if (d.ask) asks.push(now - prev.askedAtMs);
      prev = d.next!;
    }
    expect(asks.slice(0, 4)).toEqual([30_000, 60_000, 120_000, 240_000]);
    expect(new Set(asks.slice(4))).toEqual(new Set([ASK_RULES.maxBackoffMs]));
  });

  it('asks at once when something new joins what it waits on, and not when something is done', () => {
    const prev: AskState = { items: ['a', 'b'], askedAtMs: T, undone: 0 };
    expect(decideAsk(prev, { items: ['b'], nowMs: T + 10_000 }).ask).toBe(false);
    expect(decideAsk(prev, { items: ['b', 'c'], nowMs: T + 10_000 }).ask).toBe(true);
  });
});
