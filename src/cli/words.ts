/**
 * Words only the commands print (the worker's banner borrows the webhooks' words); each loop's result in words
 * is in policy/run-words.ts, since workflow runs say it of themselves too, and each loop's unit names its own
 * (src/loops/).
 */
import type { PullView } from '../contracts/pool';
import { agoWords } from '../time';

export { refillWords } from '../policy/run-words';

/**
 * A service's last recorded death for `keeper status`: `3 min ago: exit code 137 (OOM killed)`. When no fact of
 * its time survived, the time keeper counted it: `counted 3 min ago: ...`.
 */
export function lastCrashWords(d: { reason: string; diedAtMs: number | null; recordedAt: number }, nowSec: number): string {
  const when = d.diedAtMs === null ? `counted ${agoWords(d.recordedAt, nowSec)}` : agoWords(Math.floor(d.diedAtMs / 1000), nowSec);
  return `${when}: ${d.reason}`;
}

/** The webhooks as operators see them (origin and hash, never a URL: tokens live there), or that no one hears. */
export function webhooksWords(shown: string[], signed: boolean): string {
  if (shown.length === 0) return 'none (--notify-webhook): circuit events reach no one';
  return `${shown.join(', ')}${signed ? ' (signed)' : ''}`;
}

/** A pull's state for an operator: `pulling since …`, `pulled …`, `failed: …; next try …`. */
export function pullStateWords(r: PullView, iso: (unixSec: number | null) => string): string {
  if (r.state === 'pulling') return `pulling since ${iso(r.startedAt)}${r.progress ? ` (${r.progress})` : ''}`;
  if (r.state === 'pulled') return `pulled ${iso(r.finishedAt)}`;
  return `failed (attempt ${r.attempts}): ${r.error}; next try at ${iso(r.nextTryAt)}`;
}
