/**
 * Reading Docker's container list "Status" text, e.g. `Up 3 minutes (unhealthy)`, `Exited (1) 5 seconds ago`,
 * `Restarting (1) Less than a second ago`. The list carries it for free, so a tick can tell which containers
 * may have changed since its last look without inspecting each one.
 */

const UNIT_SEC: Record<string, number> = {
  second: 1,
  minute: 60,
  hour: 3600,
  day: 86_400,
  week: 604_800,
  month: 2_592_000,
  year: 31_536_000,
};

/**
 * A lower bound, in seconds, of the duration in the text (Docker's HumanDuration): the time since the
 * container started (Up ...) or stopped (... ago). null when the text carries none (Created, Dead).
 */
export function statusAgeLowerBound(status: string): number | null {
  const m =
    /^(?:Up|Exited \(-?\d+\)|Restarting \(-?\d+\)|Paused)?\s*(.*?)(?:\s+ago)?(?:\s*\((?:unhealthy|healthy|health: starting|Paused)\))*\s*$/.exec(
      status.trim(),
    );
  const text = (m?.[1] ?? '').trim();
  if (/^Less than a second$/i.test(text)) return 0;
  const about = /^About an? (second|minute|hour)$/i.exec(text);
  if (about) return UNIT_SEC[about[1].toLowerCase()];
  const n = /^(\d+) (second|minute|hour|day|week|month|year)s?$/i.exec(text);
  if (n) return Number(n[1]) * UNIT_SEC[n[2].toLowerCase()];
  return null;
}

export function isUnhealthy(status: string): boolean {
  return /\(unhealthy\)/.test(status);
}

/**
 * Whether the container may have started or stopped after `since`: true unless the text proves its last
 * start/stop happened before it. A little slack absorbs second rounding.
 */
export function mayHaveChangedSince(status: string, since: number, now: number, slackSec = 2): boolean {
  const age = statusAgeLowerBound(status);
  if (age === null) return true;
  return now - age > since - slackSec;
}
