/**
 * Deaths that Docker's restart policy absorbed while no keeper looked (a worker upgrade, a host reboot, a Temporal
 * outage) are counted at the times they happened, dated from the engine's replayed events, and the crash window
 * is applied to those times: one `keeper reconcile --once` after the absence opens a circuit only if some window
 * really held the threshold. That holds at keeper's first snapshot of a container too (no row in
 * keeper_container_snapshots): its deaths since its creation are dated by their die events, not taken as a baseline.
 * On an engine of this file's own, a real SQLite file and the shared dev server; nothing is mocked. Each test has a
 * service, a state DB and a host id of its own and waits on Docker's real restart timing, so they run side by side.
 * (The engine's event buffer rolling over is absence-rollover.test.ts's: it would take every test's events.)
 */
import { describe, expect, it } from 'vitest';
import { listCrashRecords } from '../../src/db/crash-records';
import { recordHostStart } from '../../src/db/keeper-hosts';
import { TEST_TENANT_RUNTIME, uniqueId, waitFor } from '../helpers/fixtures';
import { absenceWorld } from './absence-world';
import { nowSec, service } from './helpers';

const w = absenceWorld('dated-absence');
const {
  lookBeforeAbsence,
  reconcileOnce,
  restartCount,
  stateDb,
  imageRunning,
  aMinuteUnseen,
  backAfterAbsence,
  expectOpenedOnDatedDeaths,
  looked,
  gapsOf,
  loopingService,
} = w;

describe.concurrent('deaths found after an absence', () => {
  it('a death every 11 s while no keeper looked opens no circuit with a 10 s window and a threshold of 3', async () => {
    const s = await loopingService('sleep 11; exit 1');
    // keeper's first look once the container has died once: that death is counted, dated by its die event.
    await waitFor('the first restart', async () => (await restartCount(s.cid)) >= 1, 60_000);
    const first = await lookBeforeAbsence(s);
    expect(first.crashes).toBeGreaterThanOrEqual(1);
    expect(first.opened).toEqual([]);
    const baseline = await restartCount(s.cid);

    // keeper away while Docker restarts it every 11 s.
    await waitFor('5 more deaths', async () => (await restartCount(s.cid)) >= baseline + 5, 150_000);
    const { back, records, times } = await backAfterAbsence(s, 'absence, sparse');
    const deaths = (await restartCount(s.cid)) - baseline;
    expect(back.crashes).toBeGreaterThanOrEqual(5);
    expect(back.crashes).toBeLessThanOrEqual(deaths);
    expect(back.opened).toBe(0);
    expect(service(s.db, s.sid)).toMatchObject({ circuit_open: 0, crash_count: 1 });

    expect(records).toHaveLength(first.crashes + back.crashes);
    for (const r of records) expect(['event', 'live']).toContain(r.datedBy);
    // Each at its own time, about 11 s apart, not bunched at the look; each in a window of its own.
    gapsOf(times).forEach((gap) => expect(gap).toBeGreaterThanOrEqual(10_000));
    expect(new Set(records.map((r) => r.windowStart)).size).toBe(records.length);
  }, 300_000);

  it('a dense crash loop in the same kind of absence opens the circuit', async () => {
    // The first run lasts 40 s, time for keeper's first look; then every run dies at once.
    const s = await loopingService('[ -f /started ] || { touch /started; sleep 40; }; exit 1');
    const first = await lookBeforeAbsence(s);
    expect(first.crashes).toBe(0);
    const baseline = await restartCount(s.cid);
    expect(baseline).toBe(0);

    // Docker's restart backoff doubles from 100 ms: the next deaths 0.1, 0.2, 0.4 and 0.8 s apart, plus each start.
    await waitFor('5 deaths', async () => (await restartCount(s.cid)) >= 5, 150_000);
    const back = await reconcileOnce(s.file, s.hostId);
    const records = listCrashRecords(s.db, s.sid, 100).reverse();
    const times = records.map((r) => r.diedAtMs as number);
    console.log(
      `dense: ${back.crashes} deaths dated ${records.map((r) => r.datedBy).join(',')}, gaps ${times
        .slice(1)
        .map((t, i) => t - times[i])
        .join(',')} ms, windows ${records.map((r) => r.windowStart).join(',')}`,
    );
    expect(back.crashes).toBeGreaterThanOrEqual(5);
    expect(back.opened).toBe(1);
    expect(service(s.db, s.sid)).toMatchObject({ circuit_open: 1, status: 'crashed' });

    expect(records).toHaveLength(back.crashes);
    for (const r of records) expect(['event', 'live']).toContain(r.datedBy);
    // The first window really held three deaths; later ones join the window that opened the circuit.
    expect(records[2].diedAtMs! - records[0].diedAtMs!).toBeLessThan(10_000);
    expect(new Set(records.map((r) => r.windowStart)).size).toBe(1);
    expect(service(s.db, s.sid).crash_count).toBe(records.length);
  }, 300_000);
});

describe.concurrent("deaths found at keeper's first look at a container", () => {
  it('a dense loop a minute old at the first look opens the circuit, each death dated by its die event', async () => {
    // The operator's case: a fresh state DB, `keeper service create` of an image that exits 1 s after each start,
    // no keeper for over a minute, then `keeper reconcile --once` with a 10 s window and a threshold of 3.
    const { db, file, hostId } = stateDb();
    recordHostStart(db, hostId, nowSec());
    const tenant = uniqueId('tn-');
    const created = await w.cli([
      'service',
      'create',
      '--db',
      file,
      '--tenant',
      tenant,
      '--name',
      'loop',
      '--image',
      imageRunning('sleep 1; exit 1'),
      '--tenant-runtime',
      TEST_TENANT_RUNTIME,
      '--json',
    ]);
    const { id: sid, containerId: cid } = JSON.parse(created) as { id: string; containerId: string };
    w.fixture.trackContainer(cid);
    w.fixture.trackNetwork(`ah-tenant-${tenant}`);
    await aMinuteUnseen(cid, 9);
    expect(looked({ db, sid })).toBeUndefined();

    const { back, records, times } = await backAfterAbsence({ db, file, hostId, sid }, 'first look, dense');
    expect(back.crashes).toBeGreaterThanOrEqual(9);
    expect(records).toHaveLength(back.crashes);
    expectOpenedOnDatedDeaths({ db, sid }, back, records, times);
  }, 300_000);

  it('the same after a worker looked at the new container and then went away for a minute', async () => {
    const s = await loopingService('sleep 1; exit 1');
    const first = await lookBeforeAbsence(s);
    expect(first.opened).toEqual([]);
    const seen = await restartCount(s.cid);
    await aMinuteUnseen(s.cid, 9);

    const { back, records, times } = await backAfterAbsence(s, 'look, then absence, dense');
    expect(back.crashes).toBeGreaterThanOrEqual(9 - seen);
    expectOpenedOnDatedDeaths(s, back, records.slice(first.crashes), times.slice(first.crashes));
  }, 300_000);

  it('a death every 11 s, a minute old at the first look, opens no circuit with a 10 s window and a threshold of 3', async () => {
    const s = await loopingService('sleep 11; exit 1');
    await aMinuteUnseen(s.cid, 5);
    expect(looked(s)).toBeUndefined();

    const { back, records, times } = await backAfterAbsence(s, 'first look, sparse');
    expect(back.crashes).toBeGreaterThanOrEqual(5);
    expect(back.opened).toBe(0);
    expect(service(s.db, s.sid)).toMatchObject({ circuit_open: 0, crash_count: 1 });
    expect(records).toHaveLength(back.crashes);
    for (const r of records) expect(['event', 'live']).toContain(r.datedBy);
    expect(records[0].datedBy).toBe('event');
    for (const gap of gapsOf(times)) expect(gap).toBeGreaterThanOrEqual(10_000);
  }, 300_000);
});
