/**
 * Reading Docker's container list "Status" text, e.g. `Up 3 minutes (unhealthy)`, `Exited (1) 5 seconds ago`,
 * `Restarting (1) Less than a second ago`. The list carries it for free, so a tick can tell which containers
 * may have changed since keeper's last snapshot of them without inspecting each one.
 *
 * The durations in it are rounded (go-units' HumanDuration): `2 hours` is anything from 1.5 to 2.5 hours, `2 days`
 * 47.5 to 71.5 hours. Each text is read as the range of durations Docker words that way, never as the number it
 * shows: a container that restarted 20 minutes into a 2-hour absence reads `Up 2 hours` when keeper comes back,
 * and only the range's lower bound (1.5 hours) says it may have restarted since keeper's last snapshot.
 */

const MINUTE_SEC = 60;
const HOUR_SEC = 3600;
const HALF_HOUR_SEC = 1800;

/** A duration as Docker words it, in seconds: at least `minSec`, less than `maxSec`. */
export interface AgeRange {
  minSec: number;
  maxSec: number;
}

/**
 * The duration Docker's HumanDuration puts in each wording, by unit. Below a minute it truncates seconds, below an
 * hour minutes; from an hour on it rounds to the nearest hour (`int(d.Hours() + 0.5)`) and words that as hours, days
 * (24 rounded hours), weeks (168) or months (720); years truncate the hours again.
 */
function bandOf(n: number, unit: string): AgeRange | null {
  switch (unit) {
    case 'second':
      return { minSec: n, maxSec: n + 1 };
    case 'minute':
      return { minSec: n * MINUTE_SEC, maxSec: (n + 1) * MINUTE_SEC };
    case 'hour':
      return roundedHours(n, n + 1);
    case 'day':
      return roundedHours(24 * n, 24 * (n + 1), 24 * 7 * 2);
    case 'week':
      return roundedHours(24 * 7 * n, 24 * 7 * (n + 1), 24 * 30 * 2);
    case 'month':
      return roundedHours(24 * 30 * n, 24 * 30 * (n + 1), 24 * 365 * 2);
    case 'year':
      return { minSec: 24 * 365 * n * HOUR_SEC, maxSec: 24 * 365 * (n + 1) * HOUR_SEC };
    default:
      return null;
  }
}

/** Durations whose rounded hours lie in [fromHours, toHours), the next wording starting at `capHours` rounded hours. */
function roundedHours(fromHours: number, toHours: number, capHours = Infinity): AgeRange {
  const to = Math.min(toHours, capHours);
  return { minSec: fromHours * HOUR_SEC - HALF_HOUR_SEC, maxSec: to * HOUR_SEC - HALF_HOUR_SEC };
}

/** The words Docker uses for one of a unit, and the range each stands for. */
const ONE_OF: Record<string, AgeRange> = {
  'less than a second': { minSec: 0, maxSec: 1 },
  'about a minute': { minSec: MINUTE_SEC, maxSec: 2 * MINUTE_SEC },
  // Only reached from 60 minutes on: an hour up to the half hour that rounds to two.
  'about an hour': { minSec: HOUR_SEC, maxSec: HOUR_SEC + HALF_HOUR_SEC },
};

/**
 * The range of the duration in the text: the time since the container started (`Up …`) or stopped (`… ago`).
 * null when the text carries none (Created, Dead, Removal In Progress) or is not Docker's.
 */
export function statusAge(status: string): AgeRange | null {
  const m =
    /^(?:Up|Exited \(-?\d+\)|Restarting \(-?\d+\)|Paused)?\s*(.*?)(?:\s+ago)?(?:\s*\((?:unhealthy|healthy|health: starting|Paused)\))*\s*$/.exec(
      status.trim(),
    );
  const text = (m?.[1] ?? '').trim().toLowerCase();
  if (ONE_OF[text]) return ONE_OF[text];
  const n = /^(\d+) (second|minute|hour|day|week|month|year)s?$/.exec(text);
  return n ? bandOf(Number(n[1]), n[2]) : null;
}

/** The least the duration in the text can be, in seconds; null when the text carries none. */
export function statusAgeLowerBound(status: string): number | null {
  return statusAge(status)?.minSec ?? null;
}

export function isUnhealthy(status: string): boolean {
  return /\(unhealthy\)/.test(status);
}

/**
 * Whether the container may have started or stopped after `since`: true unless the text proves its last
 * start/stop happened before it, i.e. even the shortest duration the text can stand for puts it before `since`. A
 * little slack absorbs the second the list and keeper's clock may disagree by.
 */
export function mayHaveChangedSince(status: string, since: number, now: number, slackSec = 2): boolean {
  const age = statusAge(status);
  if (age === null) return true;
  return now - age.minSec > since - slackSec;
}
