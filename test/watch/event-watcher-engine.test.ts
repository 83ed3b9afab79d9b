/**
 * The event watcher end to end: real containers on this suite's engine, a real SQLite file, the real reconcile
 * tick started by the host's schedule on the CLI dev server. Stream drops are injected by a proxy in front
 * of the real socket. Nothing is mocked.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readEventWatcherState } from '../../src/db/events';
import type { StateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import type { EventWatcher } from '../../src/watch/event-watcher';
import { ids } from '../../src/ids';
import { requestRun } from '../../src/temporal/operations';
import type { Settings } from '../../src/settings';
import { DockerProxy } from '../helpers/docker-proxy';
import { EngineFixture, freshDb, testSettings, uniqueId, waitFor } from '../helpers/fixtures';
import { devServerForFile } from '../helpers/temporal';
import { addService, addTenant, deployments, runServiceContainer, service } from '../reconcile/rows';
import { crashContainer } from '../helpers/crash';
import { startHost, tickAfter, ticksDone, watcherFor, type Host } from './event-host';

const env = devServerForFile();
let db: StateDb;
let settings: Settings;
let tenant: string;
let host: Host | undefined;
let watchers: EventWatcher[] = [];
let proxy: DockerProxy | undefined;
const engine = new EngineFixture();
const docker = new DockerClient();

afterEach(async () => {
  for (const w of watchers) await w.stop();
  watchers = [];
  await host?.stop();
  host = undefined;
  await proxy?.close();
  proxy = undefined;
  await engine.cleanup();
  db?.close();
});

async function setup(periodic = false, overrides: Parameters<typeof testSettings>[0] = {}): Promise<void> {
  db = freshDb().db;
  settings = testSettings(overrides);
  tenant = addTenant(db);
  host = await startHost(env, db, settings, periodic);
}

function watch(dockerHost?: string): EventWatcher {
  const w = watcherFor(env, db, settings, host!.logs, dockerHost);
  watchers.push(w);
  w.start();
  return w;
}

async function runningService(): Promise<{ sid: string; cid: string }> {
  const sid = uniqueId('svc');
  const cid = await runServiceContainer(engine, tenant, sid);
  addService(db, tenant, { containerId: cid }, sid);
  return { sid, cid };
}

/** The watcher follows, and the tick it requested on connecting has recorded its result. */
async function following(before = 0): Promise<number> {
  await waitFor('the watcher to follow', () => readEventWatcherState(db, settings.hostId)?.state === 'following');
  return tickAfter(env, settings.hostId, before, 'the tick requested on connecting');
}

const ticks = () => ticksDone(env, settings.hostId);

/** Crashes the container and waits until Docker's restart policy has it running again, one restart later. */
async function killAndWaitRestart(cid: string): Promise<void> {
  // A crash just counted may be counted before Docker has restarted its container (the ticks events request are that quick).
  await waitFor('the container running', async () => (await docker.inspectContainer(cid)).status === 'running', 15_000, 20);
  const before = (await docker.inspectContainer(cid)).restartCount;
  await crashContainer(docker, cid);
  await waitFor(
    'Docker to restart it',
    async () => {
      const d = await docker.inspectContainer(cid);
      return d.status === 'running' && d.restartCount > before;
    },
    15_000,
    20,
  );
}

async function noNaturalTickBefore(ms: number): Promise<void> {
  const d = await env.client.schedule.getHandle(ids.schedule(settings.hostId, 'reconcile')).describe();
  for (const t of d.info.nextActionTimes) expect(t.getTime()).toBeGreaterThan(Date.now() + ms);
}

describe('event watcher on the real engine', () => {
  it("puts a killed container's crash in SQLite through a tick the die event requested", async () => {
    await setup();
    const { sid, cid } = await runningService();
    const w = watch();
    await following();
    await noNaturalTickBefore(3_600_000);
    const requested = w.stats.requested;
    const before = await ticks();

    await crashContainer(docker, cid);
    await waitFor('the crash in SQLite', () => service(db, sid).crash_count === 1, 10_000, 20);
    await tickAfter(env, settings.hostId, before, 'the tick that counted it');

    expect(service(db, sid)).toMatchObject({ crash_count: 1, status: expect.stringMatching(/crashed|running/) });
    expect(w.stats.relevant).toBeGreaterThanOrEqual(1);
    expect(w.stats.requested).toBeGreaterThan(requested);
    const cursor = readEventWatcherState(db, settings.hostId)?.lastEventNs;
    expect(cursor).toBeGreaterThan(0n);
  });

  it('requests a tick at the die, then once the restarted container can be seen back up, which takes its service back to running', async () => {
    await setup();
    const { sid, cid } = await runningService();
    const w = watch();
    await following();
    await waitFor('no tick request pending', () => w.idle);
    const requested = w.stats.requested;

    await crashContainer(docker, cid);
    await waitFor('the crash in SQLite', () => service(db, sid).crash_count === 1, 10_000, 20);
    // The die's pass saw the container just restarted: not back up yet.
    expect(service(db, sid).status).toBe('crashed');
    // The schedule starts no tick: the start's own request, about 11 s after it, is what brings the service back.
    await waitFor('the service back up', () => service(db, sid).status === 'running', 60_000, 100);
    await waitFor('no tick request pending', () => w.idle);
    expect(w.stats.requested - requested).toBe(2);
    expect(service(db, sid).crash_count).toBe(1);
  });

  it('makes few ticks from a burst of events', async () => {
    await setup();
    const services = await Promise.all(Array.from({ length: 6 }, () => runningService()));
    const w = watch();
    await following();
    const requested = w.stats.requested;
    const relevant = w.stats.relevant;

    await Promise.all(services.map((s) => crashContainer(docker, s.cid)));
    await waitFor('every crash in SQLite', () => services.every((s) => service(db, s.sid).crash_count === 1), 15_000, 20);
    await waitFor('the restarts seen', () => w.stats.relevant - relevant >= 12, 10_000, 20); // a die and a start each

    // Leading edge plus one request per debounce window that saw events: far fewer requests than events.
    const requests = w.stats.requested - requested;
    expect(requests).toBeGreaterThanOrEqual(1);
    expect(requests).toBeLessThanOrEqual((w.stats.relevant - relevant) / 2);
    for (const s of services) expect(service(db, s.sid).crash_count).toBe(1);
  });

  it('counts each death during a stream drop exactly once after it resumes', async () => {
    await setup();
    const { sid, cid } = await runningService();
    proxy = await DockerProxy.start();
    const w = watch(proxy.dockerHost);
    await following();
    expect(proxy.openEventStreams).toBe(1);
    await waitFor('no tick request pending', () => w.idle);

    proxy.cutStreams();
    await waitFor('the watcher to notice the drop', () => readEventWatcherState(db, settings.hostId)?.state !== 'following');
    const cursorAtDrop = readEventWatcherState(db, settings.hostId)!.lastEventNs!;
    const ticksAtDrop = await ticks();
    for (let i = 0; i < 3; i++) await killAndWaitRestart(cid);
    // Nothing counted them yet: the schedule starts no tick, and no event reached keeper.
    expect(await ticks()).toBe(ticksAtDrop);
    expect(service(db, sid).crash_count).toBe(0);
    expect(readEventWatcherState(db, settings.hostId)?.lastError).toMatch(/503|closed/);

    proxy.restoreStreams();
    await waitFor('the gap counted', () => service(db, sid).crash_count >= 3, 20_000, 20);
    await waitFor('the watcher to follow again', () => readEventWatcherState(db, settings.hostId)?.state === 'following');
    // The gap's die and start events came again through `since`: the stored cursor.
    expect(w.stats.replayed).toBeGreaterThanOrEqual(6);
    expect(readEventWatcherState(db, settings.hostId)!.lastEventNs!).toBeGreaterThan(cursorAtDrop);

    // More ticks, requested by replayed events and by hand, find nothing new to count.
    for (let i = 0; i < 2; i++) {
      const before = await ticks();
      await requestRun(env.client, settings.hostId, 'reconcile'); // BUFFER_ONE: never dropped while a tick runs
      await tickAfter(env, settings.hostId, before, 'one more tick');
    }
    expect(service(db, sid).crash_count).toBe(3);
    expect(deployments(db, sid).filter((d) => d.status === 'crashed').length).toBeGreaterThanOrEqual(1);
  });

  it('resumes from the stored cursor after a restart, replaying what happened while it was down', async () => {
    await setup();
    const { sid, cid } = await runningService();
    const first = watch();
    await following();
    await crashContainer(docker, cid);
    await waitFor('the first crash', () => service(db, sid).crash_count === 1, 10_000, 20);
    await first.stop();
    expect(readEventWatcherState(db, settings.hostId)?.state).toBe('stopped');
    const cursor = readEventWatcherState(db, settings.hostId)!.lastEventNs!;

    await killAndWaitRestart(cid); // while no watcher runs
    const before = await ticks();
    const second = watch();
    await tickAfter(env, settings.hostId, before, 'a tick after the restart');
    await waitFor('the second crash', () => service(db, sid).crash_count === 2, 10_000, 20);
    await waitFor('the replay', () => second.stats.replayed >= 2, 10_000, 20);

    expect(readEventWatcherState(db, settings.hostId)!.lastEventNs!).toBeGreaterThan(cursor);
    expect(service(db, sid).crash_count).toBe(2);
  });

  it("leaves an operator's pause alone: events request no tick while the schedule is paused", async () => {
    await setup();
    const { sid, cid } = await runningService();
    const w = watch();
    await following();
    await waitFor('no tick request pending', () => w.idle);
    const schedule = env.client.schedule.getHandle(ids.schedule(settings.hostId, 'reconcile'));
    await schedule.pause('operator');
    const before = await ticks();

    await crashContainer(docker, cid);
    await waitFor('the request declined', () => w.stats.declined >= 1, 10_000, 20);
    await waitFor('no tick request pending', () => w.idle);
    expect(await ticks()).toBe(before);
    expect(service(db, sid).crash_count).toBe(0);

    // Unpaused, the next event is counted again (the schedule's tick would count it too).
    await schedule.unpause('operator');
    await killAndWaitRestart(cid);
    await waitFor('both deaths counted', () => service(db, sid).crash_count === 2, 10_000, 20);
  });

  it("reports an unavailable stream, and the schedule's tick still counts the crash", async () => {
    await setup(true, { reconcileInterval: '2s' });
    const { sid, cid } = await runningService();
    proxy = await DockerProxy.start();
    proxy.cutStreams();
    const w = watch(proxy.dockerHost);

    const state = await waitFor('the stream reported unavailable', () => {
      const s = readEventWatcherState(db, settings.hostId);
      return s?.state === 'unavailable' && s;
    });
    expect(state.lastError).toMatch(/503/);
    expect(host!.logs.some((l) => /unavailable: crashes are seen by the local looks only/.test(l))).toBe(true);

    await crashContainer(docker, cid);
    await waitFor("the schedule's tick to count it", () => service(db, sid).crash_count === 1, 20_000, 50);
    expect(w.stats.requested).toBe(0);
    expect(readEventWatcherState(db, settings.hostId)?.state).toBe('unavailable');

    // When the engine answers again, the watcher follows again.
    proxy.restoreStreams();
    await waitFor('the watcher to follow again', () => readEventWatcherState(db, settings.hostId)?.state === 'following', 10_000);
  });
});
