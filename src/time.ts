/**
 * Time, in one place: an injectable clock (tests fix it), Unix seconds as the state DB stores them, and the
 * ISO text operators read.
 */

export interface Clock {
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };

/** Whole Unix seconds, as ah's columns hold them. */
export function unixSeconds(clock: Clock = systemClock): number {
  return Math.floor(clock.nowMs() / 1000);
}

/** `2026-12-01T10:00:00Z` for a Unix second; `-` when there is none. */
export function isoSeconds(unixSec: number | null | undefined): string {
  return unixSec ? new Date(unixSec * 1000).toISOString().replace('.000Z', 'Z') : '-';
}

/** How long ago (or how soon) a Unix second is, as operators say it: `12 s ago`, `4 min ago`, `in 2 h`. */
export function agoWords(unixSec: number, nowSec: number): string {
  const s = Math.round(nowSec - unixSec);
  const a = Math.abs(s);
  const span =
    a < 120
      ? `${a} s`
      : a < 7200
        ? `${Math.floor(a / 60)} min`
        : a < 2 * 86400
          ? `${Math.floor(a / 3600)} h`
          : `${Math.floor(a / 86400)} d`;
  return s < 0 ? `in ${span}` : `${span} ago`;
}
