/**
 * When a local look asks for a run, pure. A look that finds something new asks at once. One that finds only what it
 * asked for before waits for that run: if a run of the loop has finished since and the same things are still there,
 * that run could not do them (an engine error, a refusal), and they are asked again after a backoff that doubles; if
 * no run has finished (the request is still being sent, or the run is on its way), they are asked again only when the
 * run is overdue. Things the event path has in hand (their events arrived) count as asked for.
 */

export interface AskState {
  /** What was asked for (or left to the event path), as the look's items. */
  items: string[];
  askedAtMs: number;
  /** How long after `askedAtMs` the same items are asked again once a run has left them. */
  backoffMs: number;
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
  const fresh = (backoffMs: number): AskState => ({ items: [...look.items], askedAtMs: look.nowMs, backoffMs });
  if (!prev || isNew(prev, look)) {
    if (look.inHand) return { ask: false, next: { ...fresh(rules.firstBackoffMs), leftToEvents: true } };
    return { ask: true, next: fresh(rules.firstBackoffMs) };
  }
  const since = look.nowMs - prev.askedAtMs;
  const ranSince = look.lastRunFinishedAtMs !== undefined && look.lastRunFinishedAtMs >= prev.askedAtMs;
  if (ranSince) {
    if (since < prev.backoffMs) return { ask: false, next: prev };
    return { ask: true, next: fresh(Math.min(prev.backoffMs * 2, rules.maxBackoffMs)) };
  }
  if (since < rules.runOverdueMs) return { ask: false, next: prev };
  return { ask: true, next: fresh(prev.backoffMs) };
}

/** Something not asked for before, or left to an event path that no longer has it in hand. */
function isNew(prev: AskState, look: Look): boolean {
  const asked = new Set(prev.items);
  return (prev.leftToEvents === true && !look.inHand) || look.items.some((i) => !asked.has(i));
}
