/**
 * When a look requests a run, pure. A look that finds something new requests a run at once. One that finds only what
 * it requested before waits for that run: if a run of the loop has finished since and the same things are still
 * there, that run could not do them (an engine error, a refusal), and they are requested again after a backoff that
 * doubles; if no run has finished (the request is still being sent, or the run is on its way), they are requested
 * again only when the run is overdue. Things the event path covers (their events arrived) count as requested.
 */
import { exponentialBackoff } from '../policy/backoff';

export interface RequestState {
  /** What was requested (or left to the event path), as the look's item keys. */
  keys: string[];
  requestedAtMs: number;
  /** Runs that left the same items undone so far: the wait before requesting again doubles with each (backoffOf). */
  undone: number;
  /** Not requested: left to the event path, which covered them. A later look that finds it no longer does requests at once. */
  leftToEventPath?: boolean;
}

export interface RequestRules {
  /** The first backoff after a run left the items undone. */
  firstBackoffMs: number;
  maxBackoffMs: number;
  /** How long a request may take to become a finished run before it is made again. */
  runOverdueMs: number;
}

export const REQUEST_RULES: RequestRules = { firstBackoffMs: 30_000, maxBackoffMs: 5 * 60_000, runOverdueMs: 2 * 60_000 };

/** What a look found, as the rules read it. */
export interface Looked {
  keys: string[];
  nowMs: number;
  /** When a run of this loop last finished (unix ms), if one ever did. */
  lastRunFinishedAtMs?: number;
  /** The event path covers every item: the tick its event requested will do them. */
  covered?: boolean;
}

export interface RequestDecision {
  request: boolean;
  next: RequestState | undefined;
}

export function decideRequest(prev: RequestState | undefined, look: Looked, rules: RequestRules = REQUEST_RULES): RequestDecision {
  if (look.keys.length === 0) return { request: false, next: undefined };
  const fresh = (undone: number): RequestState => ({ keys: [...look.keys], requestedAtMs: look.nowMs, undone });
  if (!prev || isNew(prev, look)) {
    if (look.covered) return { request: false, next: { ...fresh(0), leftToEventPath: true } };
    return { request: true, next: fresh(0) };
  }
  const since = look.nowMs - prev.requestedAtMs;
  const ranSince = look.lastRunFinishedAtMs !== undefined && look.lastRunFinishedAtMs >= prev.requestedAtMs;
  if (ranSince) {
    if (since < backoffOf(prev, rules)) return { request: false, next: prev };
    return { request: true, next: fresh(prev.undone + 1) };
  }
  if (since < rules.runOverdueMs) return { request: false, next: prev };
  return { request: true, next: fresh(prev.undone) };
}

/** How long after it was requested the same items are requested again once a run has left them: doubling per run, capped. */
export function backoffOf(state: RequestState, rules: RequestRules = REQUEST_RULES): number {
  return exponentialBackoff(state.undone + 1, rules.firstBackoffMs, rules.maxBackoffMs);
}

/** Something not requested before, or left to an event path that no longer covers it. */
function isNew(prev: RequestState, look: Looked): boolean {
  const requested = new Set(prev.keys);
  return (prev.leftToEventPath === true && !look.covered) || look.keys.some((k) => !requested.has(k));
}
