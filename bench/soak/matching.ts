/**
 * Pairs what Docker recorded with what keeper recorded, one to one, so that a death keeper missed is never hidden by
 * another it counted (a count alone would let one cancel the other). A slot is one thing keeper must or may
 * record (a death, an unhealthy episode), with the times a record of it can carry; a record is one keeper row.
 *
 * 1. A record with a time of its own (dated live, by event or by the run's times, or a health check's moment) goes
 *    to the slot whose window holds that time, nearest first: a death's die event, FinishedAt or the die event
 *    lagging it by up to MATCH_TOLERANCE_MS on a loaded engine.
 * 2. A record with a time still unpaired goes to a slot of no known time (a death only RestartCount showed).
 * 3. A record with no time of its own (spread over an interval keeper did not see, or unknown) goes to the nearest
 *    slot still open, one that must be recorded first.
 *
 * What is left: slots that must be recorded are **missed**; records are **extra** (counted twice, or a death that
 * must not be counted).
 */

/** FinishedAt and the die event of one death are this far apart at most (seen: 3 s, during dockerd's shutdown). */
export const MATCH_TOLERANCE_MS = 5_000;

export interface Slot<T = unknown> {
  /** The time a record of it would carry, and the window that time may fall in; undefined: no known time. */
  atMs?: number;
  fromMs?: number;
  untilMs?: number;
  must: boolean;
  what: T;
}

export interface Recorded<R = unknown> {
  /** Undefined when the record's time is an estimate (spread) or unknown. */
  atMs?: number;
  /** Where to place it among open slots when it has no time of its own. */
  nearMs: number;
  what: R;
}

export interface Matched<T, R> {
  pairs: { slot: Slot<T>; record: Recorded<R> }[];
  missed: Slot<T>[];
  extra: Recorded<R>[];
}

export function matchRecords<T, R>(slots: Slot<T>[], records: Recorded<R>[]): Matched<T, R> {
  const open = new Set(slots);
  const left = new Set(records);
  const pairs: Matched<T, R>['pairs'] = [];
  const take = (slot: Slot<T>, record: Recorded<R>) => (open.delete(slot), left.delete(record), pairs.push({ slot, record }));
  // 1. by time, nearest pairs first
  const candidates: { slot: Slot<T>; record: Recorded<R>; gap: number }[] = [];
  for (const record of records) {
    if (record.atMs === undefined) continue;
    for (const slot of slots) {
      if (slot.atMs === undefined) continue;
      const from = slot.fromMs ?? slot.atMs - MATCH_TOLERANCE_MS;
      const until = slot.untilMs ?? slot.atMs + MATCH_TOLERANCE_MS;
      if (record.atMs >= from && record.atMs <= until) candidates.push({ slot, record, gap: Math.abs(record.atMs - slot.atMs) });
    }
  }
  for (const c of candidates.sort((a, b) => a.gap - b.gap)) if (open.has(c.slot) && left.has(c.record)) take(c.slot, c.record);
  // 2. timed records to slots of no known time
  for (const record of [...left].filter((r) => r.atMs !== undefined)) {
    const slot = [...open].find((s) => s.atMs === undefined);
    if (slot) take(slot, record);
  }
  // 3. untimed records to the nearest open slot, those that must be recorded first
  for (const record of [...left].filter((r) => r.atMs === undefined)) {
    const byNearness = [...open].sort(
      (a, b) =>
        Number(b.must) - Number(a.must) ||
        Math.abs((a.atMs ?? record.nearMs) - record.nearMs) - Math.abs((b.atMs ?? record.nearMs) - record.nearMs),
    );
    if (byNearness[0]) take(byNearness[0], record);
  }
  return { pairs, missed: [...open].filter((s) => s.must), extra: [...left] };
}
