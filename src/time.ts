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
