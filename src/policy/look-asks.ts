/**
 * When a local look asks for a run, pure. A look that finds something new asks at once. One that finds only what it
 * asked for before waits for that run: if a run of the loop has finished since and the same things are still there,
 * that run could not do them (an engine error, a refusal), and they are asked again after a backoff that doubles; if
 * no run has finished (the request is still being sent, or the run is on its way), they are asked again only when the
 * run is overdue. Things the event path has in hand (their events arrived) count as asked for.
 */
import { exponentialBackoff } from './backoff';

export interface AskState {
  /** What was asked for (or left to the event path), as the look's items. */
  items: string[];
  askedAtMs: number;
  /** Runs that left the same items undone so far: the wait before asking again doubles with each (backoffOf). */
  undone: number;
  /** Not asked for: left to the event path, which had them in hand. A later look that finds it has not asks at once. */
  leftToEvents?: boolean;
}

export interface AskRules {
  /** The first backoff after a run left the items undone. */
  firstBackoffMs: number;
  maxBackoffMs: number;
  /** How long a request may take to become a finished run before it is made again. */
  runOverdueMs: number;
}

export const ASK_RULES: AskRules = { firstBackoffMs: 30_000, maxBackoffMs: 5 * 60_000, runOverdueMs: 2 * 60_000 };

export interface Look {
  items: string[];
  nowMs: number;
  /** When a run of this loop last finished (unix ms), if one ever did. */
  lastRunFinishedAtMs?: number;
  /** Every item is in hand on the event path: the tick it asked for will do them. */
  inHand?: boolean;
}

export interface AskDecision {
  ask: boolean;
  next: AskState | undefined;
}

export function decideAsk(prev: AskState | undefined, look: Look, rules: AskRules = ASK_RULES): AskDecision {
  if (look.items.length === 0) return { ask: false, next: undefined };
  const fresh = (undone: number): AskState => ({ items: [...look.items], askedAtMs: look.nowMs, undone });
  if (!prev || isNew(prev, look)) {
    if (look.inHand) return { ask: false, next: { ...fresh(0), leftToEvents: true } };
    return { ask: true, next: fresh(0) };
  }
  const since = look.nowMs - prev.askedAtMs;
  const ranSince = look.lastRunFinishedAtMs !== undefined && look.lastRunFinishedAtMs >= prev.askedAtMs;
  if (ranSince) {
    if (since < backoffOf(prev, rules)) return { ask: false, next: prev };
    return { ask: true, next: fresh(prev.undone + 1) };
  }
  if (since < rules.runOverdueMs) return { ask: false, next: prev };
  return { ask: true, next: fresh(prev.undone) };
}

/** How long after it was asked the same items are asked again once a run has left them: doubling per run, capped. */
export function backoffOf(state: AskState, rules: AskRules = ASK_RULES): number {
  return exponentialBackoff(state.undone + 1, rules.firstBackoffMs, rules.maxBackoffMs);
}

/** Something not asked for before, or left to an event path that no longer has it in hand. */
function isNew(prev: AskState, look: Look): boolean {
  const asked = new Set(prev.items);
  return (prev.leftToEvents === true && !look.inHand) || look.items.some((i) => !asked.has(i));
}
