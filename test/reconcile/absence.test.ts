/**
 * Deaths that Docker's restart policy absorbed while no keeper looked (a worker upgrade, a host reboot, a Temporal
 * outage) are counted at the times they happened, dated from the engine's replayed events, and the crash window
 * is applied to those times: one `keeper reconcile --once` after the absence opens a circuit only if some window
 * really held the threshold. That holds at keeper's first look at a container too (no row in
 * keeper_container_looks): its deaths since its creation are dated by their die events, not taken as a baseline.
 * On an engine of this file's own, a real SQLite file and the shared dev server; nothing is mocked.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { listCrashRecords } from '../../src/db/crash-records';
import { recordHostStart } from '../../src/db/keeper-hosts';
import type { StateDb } from '../../src/db/open';
import { deleteSchedule, hostFootprint, terminateWorkflow } from '../../src/temporal/footprint';
import { keeperInProcess } from '../helpers/cli';
import { extraEngine, stopEngine, type ExtraEngine } from '../helpers/engines';
import { DockerClient } from '../../src/docker/client';
import { EngineFixture, freshDb, TEST_IMAGE, TEST_TENANT_RUNTIME, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { devServerForFile } from '../helpers/temporal';
import { activities, addService, addTenant, nowSec, runServiceContainer, service } from './helpers';

let engine: ExtraEngine;
let fixture: EngineFixture;
const env = devServerForFile();
const hosts: string[] = [];
const dbs: StateDb[] = [];
const images: string[] = [];

/** The docker CLI on this file's engine. */
const dockerCli = (...args: string[]) =>
  execFileSync('docker', args, {
    encoding: 'utf8',
    env: { ...process.env, DOCKER_HOST: engine.dockerHost },
    timeout: 60_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  }).trim();

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
  for (const image of images) dockerCli('rmi', image);
  if (engine) stopEngine(engine);
});

/**
 * keeper's look before the absence: the tick's activities in this process, as the host's worker runs them. (A
 * second one-shot command right after a first would find the first's worker still listed as a poller of the
 * host's queue for a while, and wait for it.)
 */
async function lookBeforeAbsence(s: { db: StateDb; hostId: string }) {
  const a = activities({
    db: s.db,
    docker: new DockerClient(),
    settings: testSettings({ hostId: s.hostId, crashWindow: '10s', crashThreshold: '3' }),
  });
  return a.applyObservation(await a.observeHost());
}

/** keeper back: one `keeper reconcile --once`, with the policy: a 10 s window and a threshold of 3. */
async function reconcileOnce(file: string, hostId: string) {
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
    '10s',
    '--crash-threshold',
    '3',
  ]);
  expect(r.code, r.err).toBe(0);
  return JSON.parse(r.out) as { crashes: number; opened: number };
}

const restartCount = async (cid: string) => (await fixture.docker.inspectContainer(cid)).restartCount;

/** A state DB of its own (made as the worker makes it), and a host id for it. */
function stateDb() {
  const { db, file } = freshDb();
  dbs.push(db);
  const hostId = uniqueId('host-dated-');
  hosts.push(hostId);
  return { db, file, hostId };
}

/** An image whose command is `sh -c <cmd>`: a commit of the test image (no registry can be reached). */
function imageRunning(cmd: string): string {
  const ref = `keeper-test/${uniqueId('loop-')}:latest`;
  const c = dockerCli('create', TEST_IMAGE, 'true');
  try {
    dockerCli('commit', '--change', `CMD ["sh", "-c", ${JSON.stringify(cmd)}]`, c, ref);
  } finally {
    dockerCli('rm', c);
  }
  images.push(ref);
  return ref;
}

/** Waits until the container's first minute has passed and Docker has restarted it `restarts` times: deaths keeper never saw. */
async function aMinuteUnseen(cid: string, restarts: number) {
  const createdMs = (await fixture.docker.inspectContainer(cid)).createdAt * 1000;
  await waitFor(
    `a minute since the container's creation and ${restarts} restarts`,
    async () => Date.now() - createdMs >= 70_000 && (await restartCount(cid)) >= restarts,
    180_000,
    1000,
  );
}

/** The container's die events the engine still has, as unix ms. */
async function dieTimes(cid: string): Promise<number[]> {
  const events = await fixture.docker.readEvents({
    since: 0,
    until: (Date.now() / 1000).toFixed(3),
    types: ['container'],
    actions: ['die'],
  });
  return events.filter((e) => e.id === cid).map((e) => Number(e.timeNano / 1_000_000n));
}

/**
 * Fills the engine's event buffer (its last 256 events, of every kind) with `rename` events of a container of
 * no service: what a busy host does to the events of older deaths (health checks' execs, other containers).
 */
async function rollEventsOver() {
  const name = uniqueId('busy-');
  const id = await fixture.run({ name, network: 'none' }, false);
  for (let i = 0; i < 300; i++) await fixture.docker.renameContainer(id, `${name}-${i}`);
}

/** keeper back: `keeper reconcile --once`, and the service's recorded deaths, oldest first, as the log shows them. */
async function backAfterAbsence(s: { db: StateDb; file: string; hostId: string; sid: string }, what: string) {
  const back = await reconcileOnce(s.file, s.hostId);
  const records = listCrashRecords(s.db, s.sid, 100).reverse();
  const times = records.map((r) => r.diedAtMs as number);
  console.log(`${what}: ${back.crashes} deaths dated ${records.map((r) => r.datedBy).join(',')}, gaps ${gapsOf(times).join(',')} ms`);
  return { back, records, times };
}

/**
 * The circuit opened, and the deaths keeper did not see are dated: the older ones (over a minute old) by their die
 * events, the first three inside one 10 s window.
 */
function expectOpenedOnDatedDeaths(
  s: { db: StateDb; sid: string },
  back: { opened: number },
  unseen: { datedBy: string | null }[],
  times: number[],
) {
  expect(back.opened).toBe(1);
  expect(service(s.db, s.sid)).toMatchObject({ circuit_open: 1, status: 'crashed' });
  expect(unseen.slice(0, 3).map((r) => r.datedBy)).toEqual(['event', 'event', 'event']);
  for (const r of unseen) expect(['event', 'live']).toContain(r.datedBy);
  expect(times[2] - times[0]).toBeLessThan(10_000);
}

const looked = (s: { db: StateDb; sid: string }) => s.db.prepare('SELECT * FROM keeper_container_looks WHERE service_id = ?').get(s.sid);
const gapsOf = (times: number[]) => times.slice(1).map((t, i) => t - times[i]);

/** A service under unless-stopped running `cmd`, on a state DB of its own. */
async function loopingService(cmd: string) {
  const { db, file, hostId } = stateDb();
  const tenant = addTenant(db);
  const sid = uniqueId('svc');
  const cid = await runServiceContainer(fixture, tenant, sid, { cmd: ['sh', '-c', cmd] });
  addService(db, tenant, { containerId: cid }, sid);
  return { db, file, hostId, sid, cid };
}

describe('deaths found after an absence', () => {
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

describe("deaths found at keeper's first look at a container", () => {
  it('a dense loop a minute old at the first look opens the circuit, each death dated by its die event', async () => {
    // The operator's case: a fresh state DB, `keeper service create` of an image that exits 1 s after each start,
    // no keeper for over a minute, then `keeper reconcile --once` with a 10 s window and a threshold of 3.
    const { db, file, hostId } = stateDb();
    recordHostStart(db, hostId, nowSec());
    const tenant = uniqueId('tn-');
    const created = await keeperInProcess([
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
    expect(created.code, created.err).toBe(0);
    const { id: sid, containerId: cid } = JSON.parse(created.out) as { id: string; containerId: string };
    fixture.trackContainer(cid);
    fixture.trackNetwork(`ah-tenant-${tenant}`);
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
    const createdMs = (await fixture.docker.inspectContainer(s.cid)).createdAt * 1000;
    times.forEach((t, i) => expect(t).toBeGreaterThan(i === 0 ? createdMs : times[i - 1]));
    times.forEach((t, i) => expect(Math.abs(t - truth[truth.length - records.length + i])).toBeLessThan(8_000));
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
