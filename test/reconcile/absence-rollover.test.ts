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

describe("deaths found at keeper's first look at a container", () => {
  it("the same when the engine's event buffer rolled over meanwhile: the deaths are placed by Docker's restart backoff", async () => {
    const s = await loopingService('sleep 1; exit 1');
    const first = await lookBeforeAbsence(s);
    expect(first.opened).toEqual([]);
    await aMinuteUnseen(s.cid, 9);
    const truth = await dieTimes(s.cid);
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
    // In order, after the container's creation, and close to when they happened (the model leaves out the
    // few hundred ms each start takes, so it places deaths a little late).
    const createdMs = (await w.fixture.docker.inspectContainer(s.cid)).createdAt * 1000;
    times.forEach((t, i) => expect(t).toBeGreaterThan(i === 0 ? createdMs : times[i - 1]));
    times.forEach((t, i) => expect(Math.abs(t - truth[truth.length - records.length + i])).toBeLessThan(8_000));
  }, 300_000);
});
