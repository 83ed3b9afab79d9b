/**
 * Deaths that Docker's restart policy absorbed while no keeper looked (a worker upgrade, a host reboot, a Temporal
 * outage) are counted at the times they happened, dated from the engine's replayed events, and the crash window
 * is applied to those times: one `keeper reconcile --once` after the absence opens a circuit only if some window
 * really held the threshold. On an engine of this file's own, a real SQLite file and the shared dev server; nothing
 * is mocked.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { listCrashRecords } from '../../src/db/crash-records';
import type { StateDb } from '../../src/db/open';
import { deleteSchedule, hostFootprint, terminateWorkflow } from '../../src/temporal/footprint';
import { keeperInProcess } from '../helpers/cli';
import { extraEngine, stopEngine, type ExtraEngine } from '../helpers/engines';
import { DockerClient } from '../../src/docker/client';
import { EngineFixture, freshDb, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { devServerForFile } from '../helpers/temporal';
import { activities, addService, addTenant, runServiceContainer, service } from './helpers';

let engine: ExtraEngine;
let fixture: EngineFixture;
const env = devServerForFile();
const hosts: string[] = [];
const dbs: StateDb[] = [];

beforeAll(() => {
  engine = extraEngine('dated-absence');
  process.env.DOCKER_HOST = engine.dockerHost;
  fixture = new EngineFixture();
});

// Registered after devServerForFile's, so it runs first, with the connection still open.
afterAll(async () => {
  for (const host of hosts) {
    const f = await hostFootprint(env.client, host);
    for (const s of f.schedules) await deleteSchedule(env.client, s.scheduleId);
    for (const w of f.running) await terminateWorkflow(env.client, w.workflowId, 'test cleanup');
  }
  for (const db of dbs) db.close();
  await fixture?.cleanup();
  if (engine) stopEngine(engine);
});

/**
 * keeper's look before the absence: the tick's activities in this process, as the host's worker runs them. (A
 * second one-shot command right after a first would find the first's worker still listed as a poller of the
 * host's queue for a while, and wait for it.)
 */
async function lookBeforeAbsence(s: { db: StateDb; hostId: string }, crashWindow: string) {
  const a = activities({
    db: s.db,
    docker: new DockerClient(),
    settings: testSettings({ hostId: s.hostId, crashWindow, crashThreshold: '3' }),
  });
  return a.applyObservation(await a.observeHost());
}

/** keeper back: one `keeper reconcile --once`, with a threshold of 3 in `crashWindow`. */
async function reconcileOnce(file: string, hostId: string, crashWindow: string) {
  const r = await keeperInProcess([
    'reconcile',
    '--once',
    '--json',
    '--db',
    file,
    '--host-id',
    hostId,
    '--temporal-address',
    inject('devServerAddress'),
    '--crash-window',
    crashWindow,
    '--crash-threshold',
    '3',
  ]);
  expect(r.code, r.err).toBe(0);
  return JSON.parse(r.out) as { crashes: number; opened: number };
}

const restartCount = async (cid: string) => (await fixture.docker.inspectContainer(cid)).restartCount;

/** A service under unless-stopped running `cmd`, on a state DB of its own. */
async function loopingService(cmd: string) {
  const { db, file } = freshDb();
  dbs.push(db);
  const hostId = uniqueId('host-dated-');
  hosts.push(hostId);
  const tenant = addTenant(db);
  const sid = uniqueId('svc');
  const cid = await runServiceContainer(fixture, tenant, sid, { cmd: ['sh', '-c', cmd] });
  addService(db, tenant, { containerId: cid }, sid);
  return { db, file, hostId, sid, cid };
}

describe('deaths found after an absence', () => {
  it('a death every 3 s or more while no keeper looked opens no circuit with a 2 s window and a threshold of 3', async () => {
    // Each run lasts 3 s, and Docker's restart delay comes on top: deaths are over 3 s apart, more than the window.
    const s = await loopingService('sleep 3; exit 1');
    // keeper's first look once the container has died once: the baseline, counted as nothing.
    await waitFor('the first restart', async () => (await restartCount(s.cid)) >= 1, 60_000);
    const first = await lookBeforeAbsence(s, '2s');
    expect(first.crashes).toBe(0);
    const baseline = await restartCount(s.cid);

    // keeper away while Docker restarts it every 3 s and more.
    await waitFor('5 more deaths', async () => (await restartCount(s.cid)) >= baseline + 5, 150_000);
    const back = await reconcileOnce(s.file, s.hostId, '2s');
    const deaths = (await restartCount(s.cid)) - baseline;
    expect(back.crashes).toBeGreaterThanOrEqual(5);
    expect(back.crashes).toBeLessThanOrEqual(deaths);
    expect(back.opened).toBe(0);
    expect(service(s.db, s.sid)).toMatchObject({ circuit_open: 0, crash_count: 1 });

    const records = listCrashRecords(s.db, s.sid, 100).reverse();
    expect(records).toHaveLength(back.crashes);
    for (const r of records) expect(['event', 'live']).toContain(r.datedBy);
    const times = records.map((r) => r.diedAtMs as number);
    // Each at its own time, over 3 s apart, not bunched at the look; each in a window of its own.
    times.slice(1).forEach((t, i) => expect(t - times[i]).toBeGreaterThanOrEqual(3_000));
    expect(new Set(records.map((r) => r.windowStart)).size).toBe(records.length);
    console.log(
      `absence: ${back.crashes} deaths dated ${records.map((r) => r.datedBy).join(',')}, gaps ${times
        .slice(1)
        .map((t, i) => t - times[i])
        .join(',')} ms`,
    );
  }, 300_000);

  it('a dense crash loop in the same kind of absence opens the circuit with a 10 s window and a threshold of 3', async () => {
    // The first run lasts until keeper's first look is done (the test then writes /looked); every later run dies at once.
    const s = await loopingService('[ -f /started ] || { touch /started; until [ -f /looked ]; do sleep 0.1; done; }; exit 1');
    const first = await lookBeforeAbsence(s, '10s');
    expect(first.crashes).toBe(0);
    const baseline = await restartCount(s.cid);
    expect(baseline).toBe(0);
    execFileSync('docker', ['exec', s.cid, 'touch', '/looked'], { env: { ...process.env, DOCKER_HOST: engine.dockerHost } });

    // Docker's restart backoff doubles from 100 ms: the next deaths 0.1, 0.2, 0.4 and 0.8 s apart, plus each start.
    await waitFor('5 deaths', async () => (await restartCount(s.cid)) >= 5, 150_000);
    const back = await reconcileOnce(s.file, s.hostId, '10s');
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
