/**
 * When each counted death happened, pure. The crash window and threshold are applied to these times, not to the
 * moment keeper looks, so deaths found after an absence (a worker upgrade, a host reboot, a Temporal outage) are
 * counted where they fell. How a death was dated:
 * - `live`: keeper looked within LIVE_LAG_MS of the death, which has its own time (die event or run times);
 * - `event`: the engine's replayed die event since keeper's last look;
 * - `run-times`: the container's State.FinishedAt (the run that is down now, or the last run Docker restarted);
 * - `spread`: nothing of its time survived (the engine's event buffer rolled over, or the engine restarted):
 *   such deaths are spread evenly over the part of the unseen interval they must lie in, never bunched at "now".
 * All times are unix milliseconds.
 */
import type { DatedBy, DeathFacts } from '../contracts/reconcile';

export type { DatedBy };

/** A death keeper sees this soon after it happened was seen as it happened. */
export const LIVE_LAG_MS = 60_000;

/** What keeper did not see: from its last look at the container (or the container's creation) to this look. */
export interface UnseenInterval {
  sinceMs: number;
  untilMs: number;
}

export type Dated<T> = T & { diedAtMs: number; datedBy: DatedBy };

/** How a death with a known time was dated. */
function methodOf(f: DeathFacts, diedAtMs: number, untilMs: number): DatedBy {
  if (f.seenBy === 'health-check' || untilMs - diedAtMs <= LIVE_LAG_MS) return 'live';
  return f.seenBy === 'event' ? 'event' : 'run-times';
}

/**
 * Each death with its time and how it was dated, in the given order (oldest first). A run of deaths without a
 * time lies between its dated neighbours (or the interval's ends): its deaths are placed evenly inside that gap.
 */
export function dateDeaths<T extends DeathFacts>(deaths: T[], unseen: UnseenInterval): Dated<T>[] {
  const untilMs = Math.max(unseen.untilMs, unseen.sinceMs);
  const out: Dated<T>[] = [];
  let i = 0;
  while (i < deaths.length) {
    const known = deaths[i].diedAtMs;
    if (known !== null) {
      const at = Math.min(known, untilMs);
      out.push({ ...deaths[i], diedAtMs: at, datedBy: methodOf(deaths[i], at, untilMs) });
      i++;
      continue;
    }
    let end = i;
    while (end < deaths.length && deaths[end].diedAtMs === null) end++;
    const fromMs = out.length > 0 ? out[out.length - 1].diedAtMs : unseen.sinceMs;
    const nextKnown = end < deaths.length ? Math.min(deaths[end].diedAtMs as number, untilMs) : untilMs;
    const toMs = Math.max(nextKnown, fromMs);
    const count = end - i;
    for (let k = 1; k <= count; k++) {
      out.push({ ...deaths[i + k - 1], diedAtMs: Math.round(fromMs + ((toMs - fromMs) * k) / (count + 1)), datedBy: 'spread' });
    }
    i = end;
  }
  return out;
}
