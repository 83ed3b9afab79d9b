/**
 * The world of the absence tests: an engine of the test file's own, the shared dev server, state DBs and host ids
 * of their own per test, and keeper's two sides of an absence: a look before it (the tick's activities in this
 * process, as the host's worker runs them) and `keeper reconcile --once` after it (the built CLI, in a child process,
 * so that tests in one file can run side by side). Nothing is mocked.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import { listCrashRecords } from '../../src/db/crash-records';
import type { StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { LIVE_LAG_MS } from '../../src/policy/deaths/dating';
import { deleteSchedule, terminateWorkflow } from '../../src/temporal/footprint';
import { loopFootprint } from '../../src/loops/schedules';
import { keeper } from '../helpers/cli';
import { extraEngine, stopEngine, type ExtraEngine } from '../helpers/engines';
import { EngineFixture, freshDb, TEST_IMAGE, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { devServerForFile } from '../helpers/temporal';
import { activities, addService, addTenant, runServiceContainer, service } from './helpers';

export type AbsenceWorld = ReturnType<typeof absenceWorld>;

/** Registers the file's setup and teardown; returns the helpers. */
export function absenceWorld(engineName: string) {
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
    engine = extraEngine(engineName);
    process.env.DOCKER_HOST = engine.dockerHost;
    fixture = new EngineFixture();
  });

  // Registered after devServerForFile's, so it runs first, with the connection still open.
  afterAll(async () => {
    for (const host of hosts) {
      const f = await loopFootprint(env.client, host);
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
    const r = await cli([
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
    return JSON.parse(r) as { crashes: number; opened: number };
  }

  /** The built CLI in a child process on this file's engine; its stdout, once it exited 0. */
  async function cli(args: string[]): Promise<string> {
    const r = await keeper(args, { DOCKER_HOST: engine.dockerHost });
    expect(r.code, r.stderr).toBe(0);
    return r.stdout;
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

  /**
   * Waits until the container's first death is well over LIVE_LAG_MS old and Docker has restarted it `restarts`
   * times: deaths keeper never saw, the oldest too old to count as seen live. Timed from the first die event, not
   * from the creation: on a busy engine the first run starts seconds late.
   */
  async function aMinuteUnseen(cid: string, restarts: number) {
    const oldEnoughMs = LIVE_LAG_MS + 10_000;
    await waitFor(
      `the first death ${oldEnoughMs} ms old and ${restarts} restarts`,
      async () => {
        const [firstDieMs] = await dieTimes(cid);
        return firstDieMs !== undefined && Date.now() - firstDieMs >= oldEnoughMs && (await restartCount(cid)) >= restarts;
      },
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

  const looked = (s: { db: StateDb; sid: string }) =>
    s.db.prepare('SELECT * FROM keeper_container_snapshots WHERE service_id = ?').get(s.sid);
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

  return {
    env,
    get fixture() {
      return fixture;
    },
    cli,
    lookBeforeAbsence,
    reconcileOnce,
    restartCount,
    stateDb,
    imageRunning,
    aMinuteUnseen,
    dieTimes,
    rollEventsOver,
    backAfterAbsence,
    expectOpenedOnDatedDeaths,
    looked,
    gapsOf,
    loopingService,
  };
}
