/**
 * Deaths found after an absence in which the engine's event buffer (its last 256 events) rolled over: no die event
 * is left to date them, and they are placed by Docker's restart backoff, close to when they happened, so that a
 * dense loop still opens its circuit. A file of its own: filling the buffer takes every other test's events too.
 */
import { describe, expect, it } from 'vitest';
import { listCrashRecords } from '../../src/db/crash-records';
import { absenceWorld } from './absence-world';

const w = absenceWorld('dated-rollover');
const { lookBeforeAbsence, reconcileOnce, aMinuteUnseen, dieTimes, rollEventsOver, loopingService } = w;

const LOOP_DEATHS = 6;
/** Dies a second after each start, LOOP_DEATHS times (counted in its own writable layer, which restarts keep), then runs. */
const LOOP_THEN_RUN = `n=$(cat /deaths 2>/dev/null || echo 0); [ "$n" -ge ${LOOP_DEATHS} ] && exec sleep 86400; echo $((n + 1)) > /deaths; sleep 1; exit 1`;

describe("deaths found at keeper's first look at a container", () => {
  it("the same when the engine's event buffer rolled over meanwhile: the deaths are placed by Docker's restart backoff", async () => {
    // A dense loop of 6 deaths that then runs on: its whole loop takes ~10 s, and no death comes after the truth is
    // read. (A loop left running for the minute spans ~60 s of doubling delays, and on a loaded machine one stalled
    // start or a starved run shifted every placed death by up to 30 s: CI's run beside a soak.)
    const s = await loopingService(LOOP_THEN_RUN);
    const first = await lookBeforeAbsence(s);
    expect(first.opened).toEqual([]);
    await aMinuteUnseen(s.cid, LOOP_DEATHS);
    const truth = await dieTimes(s.cid);
    expect(truth).toHaveLength(LOOP_DEATHS);
    await rollEventsOver();
    expect(await dieTimes(s.cid)).toEqual([]);

    const back = await reconcileOnce(s.file, s.hostId);
    const records = listCrashRecords(s.db, s.sid, 100).reverse().slice(first.crashes);
    const times = records.map((r) => r.diedAtMs as number);
    const placed = records.map((r, i) => `${r.datedBy} ${times[i] - truth[truth.length - records.length + i]}`);
    console.log(`rolled over, dense: ${back.crashes} deaths, placed minus true time (ms): ${placed.join(', ')}`);
    expect(back.opened).toBe(1);
    expect(records.slice(0, 3).map((r) => r.datedBy)).toEqual(['spread', 'spread', 'spread']);
    expect(times[2] - times[0]).toBeLessThan(10_000);
    // In order, not before the container's creation (the model's longest run time puts the first at the look
    // before the absence, which here shares the creation's second), and close to when they happened.
    const createdMs = (await w.fixture.docker.inspectContainer(s.cid)).createdAt * 1000;
    times.forEach((t, i) => (i === 0 ? expect(t).toBeGreaterThanOrEqual(createdMs) : expect(t).toBeGreaterThan(times[i - 1])));
    times.forEach((t, i) => expect(Math.abs(t - truth[truth.length - records.length + i])).toBeLessThan(8_000));
  }, 300_000);
});
