/**
 * A circuit in an operator's words, pure: why it opened, which its workflow run carries as its summary in the
 * Temporal UI (set when the tick starts it), and where it stands, which the run shows as its current details.
 * Two numbers, one word each: a circuit's *opening* (opening 7: its own number, never repeated, which its alerts
 * and hold go by) and its *escalation* (the level that picked its backoff, which decays back to 0).
 * Workflow code imports this module: it stays deterministic.
 */
import type { CircuitState } from '../contracts/circuit';
import type { CircuitRef, CrashPolicy } from '../contracts/reconcile';
import { count } from './run-words';

const iso = (sec: number) => isoTime(sec * 1000);

/** An instant as an operator reads it in an alert or a run's words: `2030-03-17T17:46:40Z`. */
export const isoTime = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

/** How a circuit closed, as its run and its alert both say it. */
export const closedWords = (closedBy: 'timer' | 'reset' | undefined, status: string | undefined) =>
  `closed by ${closedBy === 'reset' ? 'an operator reset' : 'its timer'}; service ${status ?? 'stopped'}`;

/**
 * Which opening, in words: `opening 7, escalation 2`. Either number may be unknown: a run that began before openings
 * were numbered knows only its escalation, and a ref from an older history neither (then '').
 */
export function openingWords(o: { opening?: number; escalation?: number }): string {
  return [o.opening !== undefined ? `opening ${o.opening}` : '', o.escalation !== undefined ? `escalation ${o.escalation}` : '']
    .filter(Boolean)
    .join(', ');
}

/** ` (opening 7, escalation 2)` after what it qualifies, or nothing when neither number is known. */
export const openingInParens = (o: { opening?: number; escalation?: number }) => (openingWords(o) ? ` (${openingWords(o)})` : '');

/** Why a crash opened a circuit: `3 crashes within 10s (threshold 3)`. */
export function openingWhy(crashCount: number, policy: Pick<CrashPolicy, 'windowSec' | 'threshold'>): string {
  return `${count(crashCount, 'crash', 'crashes')} within ${policy.windowSec}s (threshold ${policy.threshold})`;
}

/**
 * The summary of a circuit's run, from the tick that starts it: which opening, why it opened, when it retries. A
 * circuit the tick hands over (opened by ah, or while no workflow held it) has no why of this tick's.
 */
export function circuitSummary(c: CircuitRef): string {
  const opened = c.why
    ? `circuit opened${openingInParens(c)}: ${c.why}`
    : `open circuit taken over${openingInParens(c)}: opened earlier, by ah or by keeper`;
  return `${c.serviceId}: ${opened}; retries at ${iso(c.retryAt)}`;
}

/** Where a circuit's run stands, with the deaths that opened it: the run's current details. */
export function circuitDetails(s: CircuitState): string {
  const deaths = s.deaths ?? [];
  const last = deaths[deaths.length - 1];
  const why = last ? `${count(deaths.length, 'recorded death')} in its window, the last: ${last.reason}` : '';
  const which = openingWords(s.opening !== undefined ? { opening: s.opening } : { escalation: s.escalation });
  switch (s.phase) {
    case 'open':
      return [`open${openingInParens(s)} until ${iso(s.retryAt)}`, why, `reset: keeper circuit reset ${s.serviceId}`]
        .filter(Boolean)
        .join('; ');
    case 'recovering':
      return `recovering (${which})`;
    case 'closed':
      return s.closedBy === 'superseded' ? `closed already (${which}): nothing to recover` : closedWords(s.closedBy, s.status);
  }
}
