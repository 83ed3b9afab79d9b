/**
 * The Engine contract: what keeper's loops rely on a Docker engine to do, written once and run against both
 * engines keeper's tests use. `test/engine/real.test.ts` runs it against a real engine of its own through keeper's
 * adapter (src/docker/client.ts; the integration tier); `test/engine/memory.test.ts` against the in-memory test
 * double (test/helpers/memory-engine.ts; the fast tier), whose faithfulness the millisecond tests of host/'s rules
 * depend on. Where the two differ, the double is wrong: the statuses and texts here are Docker's own (20.10).
 *
 * The suite sees an engine only through `Engine` (src/docker/engine.ts), plus a few things only a test does to a
 * host (ContractHost): kill a main process from outside, write to a container's output, make an image.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ContainerDetails, ContainerSpec, DockerEvent, Engine, EventQuery } from '../../src/docker/engine';
import { DockerError, ignoreNotFound, isEngineSilent, isNotFound } from '../../src/docker/errors';
import { uniqueId, waitFor } from '../helpers/fixtures';

/** An engine, and what a test does to its host beside the Engine calls. */
export interface ContractHost {
  engine: Engine;
  /** An image on the engine with busybox's applets (`sleep`, `sh`, `true`, `false`). */
  image: string;
  /** The container's main process is SIGKILLed from outside the engine (the kernel's OOM killer, a segfault): exit 137. */
  crash(containerId: string): Promise<void>;
  /** The container's main process writes `line` and a newline to its stdout, now. */
  write(containerId: string, line: string): Promise<void>;
  /** The container's health check runs and gives `verdict`; a real engine runs it by itself, a double is told. */
  checkHealth(containerId: string, verdict: 'healthy' | 'unhealthy'): Promise<void>;
  /** A new image with `labels`, tagged `ref`, or dangling (untagged) when `ref` is null; returns its id. */
  makeImage(ref: string | null, labels: Record<string, string>): Promise<string>;
  /**
   * The same engine as keeper reaches it, with a read deadline of `readDeadlineMs`, and a way to wedge it: from
   * `wedge` on it takes every call and answers none, until `release` (a real engine: through a proxy that holds
   * every request, test/helpers/docker-proxy.ts).
   */
  wedgeable(): Promise<WedgeableEngine>;
}

export interface WedgeableEngine {
  engine: Engine;
  readDeadlineMs: number;
  wedge(): void;
  release(): void;
  close(): Promise<void>;
}

/** Each test's own names and label, so that tests never see each other's containers, volumes, networks or images. */
interface Scope {
  /** `keeper.contract=<run>`: on every container and image a test makes. */
  labels: Record<string, string>;
  name(part: string): string;
  /** A registry-like repository prefix of this test's own, as ah's build images have (`127.0.0.1:5000/ah/`). */
  repo: string;
}

const RUN_LABEL = 'keeper.contract';

/** Waits longer than the time an engine takes to see a crash and restart under load; no fixed sleeps. */
const SETTLE_MS = 30_000;

/** Seconds as the events endpoint takes them, to the millisecond. */
const secs = (ms: number) => (ms / 1000).toFixed(3);

/**
 * A point in time strictly between what happened before the call and what happens after it: the clock has moved
 * past it when this returns, so an event or a log line is either before it or after it, never at it.
 */
async function mark(): Promise<number> {
  const at = Date.now() + 1;
  await waitFor('the clock to move', () => Date.now() > at, 1_000, 1);
  return at;
}

/** The DockerError `p` fails with; the test fails if it resolves or fails otherwise. */
async function failure(p: Promise<unknown>): Promise<DockerError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof DockerError) return err;
    throw err;
  }
  throw new Error('expected a DockerError');
}

/** A failure's status and whether it reads as "gone". */
const verdict = async (p: Promise<unknown>) => {
  const err = await failure(p);
  return { status: err.status, isNotFound: isNotFound(err) };
};

const GONE = { status: 404, isNotFound: true };

export function engineContract(host: () => ContractHost): void {
  let scope: Scope;
  beforeEach(() => {
    const run = uniqueId('');
    scope = { labels: { [RUN_LABEL]: run }, name: (part) => `kc-${run}-${part}`, repo: `127.0.0.1:5000/kc-${run}/` };
  });
  afterEach(() => removeWhatTheTestMade(host().engine, scope));

  /** A container of this test (busybox `sleep` under an init, so that a stop's SIGTERM ends it at once: exit 143). */
  const create = (part: string, spec: Partial<ContainerSpec> = {}) =>
    host().engine.createContainer({
      name: scope.name(part),
      image: host().image,
      cmd: ['sleep', '3600'],
      init: true,
      ...spec,
      labels: { ...scope.labels, ...spec.labels },
    });
  const run = async (part: string, spec: Partial<ContainerSpec> = {}) => {
    const id = await create(part, spec);
    await host().engine.startContainer(id);
    return id;
  };
  /** The actions of container `id`'s events since `sinceMs`, once at least `count` have come (events are logged as they happen). */
  const actionsOf = async (id: string, sinceMs: number, count: number, query: Partial<EventQuery> = {}) => {
    const read = async () =>
      (await host().engine.readEvents({ since: secs(sinceMs), until: secs(Date.now()), labels: scope.labels, ...query })).filter(
        (e) => e.id === id,
      );
    const events = await waitFor(`${count} events of ${id.slice(0, 12)}`, async () => {
      const got = await read();
      return got.length >= count && got;
    });
    return events.map((e) =>
      e.action === 'die' ? `die ${e.attributes.exitCode}` : e.action === 'kill' ? `kill ${e.attributes.signal}` : e.action,
    );
  };

  describe('containers', () => {
    it('lists by label (a value, or present with any value), stopped ones unless all is false, with name, image, labels, state and status', async () => {
      const { engine } = host();
      const since = Date.now();
      const web = await run('web', { labels: { 'kc.role': 'web' } });
      const idle = await create('idle');
      await engine.createContainer({ name: scope.name('other'), image: host().image, labels: { [RUN_LABEL]: 'someone-else' } });

      const all = await engine.listContainers(scope.labels);
      expect(all.map((c) => c.id).sort()).toEqual([web, idle].sort());
      expect((await engine.listContainers({ ...scope.labels, 'kc.role': true })).map((c) => c.id)).toEqual([web]);
      expect((await engine.listContainers({ ...scope.labels, 'kc.role': 'db' })).map((c) => c.id)).toEqual([]);
      expect((await engine.listContainers(scope.labels, { all: false })).map((c) => c.id)).toEqual([web]);
      const listed = all.find((c) => c.id === web)!;
      expect(listed).toMatchObject({ name: scope.name('web'), image: host().image, labels: { 'kc.role': 'web' }, state: 'running' });
      expect(listed.status).toMatch(/^Up /);
      expect(listed.createdAt).toBeGreaterThanOrEqual(Math.floor(since / 1000));
      expect(listed.createdAt).toBeLessThanOrEqual(Date.now() / 1000);
      expect(all.find((c) => c.id === idle)).toMatchObject({ state: 'created', status: 'Created' });
      expect((await engine.inspectContainer(scope.name('idle'))).id).toBe(idle); // by name too
      expect((await engine.inspectContainer(idle.slice(0, 12))).id).toBe(idle); // and by a unique prefix of its id
    });

    it('inspects a created, a running and a stopped container: state, exit code, pid, times, policy, mounts, networks', async () => {
      const { engine } = host();
      const volume = scope.name('vol');
      const id = await create('c', { restartPolicy: 'on-failure', volumes: [{ name: volume, target: '/data' }] });
      const created = await engine.inspectContainer(id);
      expect(created).toMatchObject({ status: 'created', exitCode: 0, pid: 0, restartCount: 0, startedAt: 0, finishedAt: 0 });
      expect(created).toMatchObject({ startedAtMs: null, finishedAtMs: null, restartPolicy: 'on-failure', oomKilled: false, error: '' });
      expect(created).toMatchObject({ name: scope.name('c'), image: host().image, labels: scope.labels, health: '' });
      expect(created.mounts).toEqual([{ type: 'volume', name: volume, destination: '/data' }]);
      expect(created.networks).toEqual(['bridge']);

      const beforeStart = await mark();
      await engine.startContainer(id);
      const running = await engine.inspectContainer(id);
      expect(running.status).toBe('running');
      expect(running.pid).toBeGreaterThan(0);
      expect(running.startedAtMs).toBeGreaterThanOrEqual(beforeStart);
      expect(running.startedAtMs).toBeLessThanOrEqual(Date.now());
      expect(running.startedAt).toBe(Math.floor(running.startedAtMs! / 1000));

      const beforeStop = await mark();
      await engine.stopContainer(id, 5);
      const stopped = await engine.inspectContainer(id);
      expect(stopped).toMatchObject({ status: 'exited', exitCode: 143, pid: 0, startedAtMs: running.startedAtMs });
      expect(stopped.finishedAtMs).toBeGreaterThanOrEqual(beforeStop);
      expect(stopped.finishedAtMs).toBeLessThanOrEqual(Date.now());
      expect((await engine.listContainers(scope.labels))[0].status).toMatch(/^Exited \(143\) .+ ago$/);
    });

    it('reports health: starting until the check has run, then its verdict, in the inspect, the status text and an event', async () => {
      const { engine } = host();
      const since = Date.now();
      // A check that first runs after a minute: the container stays `starting` for the whole test.
      const later = await run('later', { healthcheck: { cmd: ['true'], intervalMs: 60_000 } });
      const sick = await run('sick', { healthcheck: { cmd: ['false'], intervalMs: 500, retries: 1 } });
      expect((await engine.inspectContainer(later)).health).toBe('starting');
      await host().checkHealth(sick, 'unhealthy');
      await waitFor('the check to fail', async () => (await engine.inspectContainer(sick)).health === 'unhealthy', SETTLE_MS);
      const statusOf = async (id: string) => (await engine.listContainers(scope.labels)).find((c) => c.id === id)!.status;
      expect(await statusOf(later)).toMatch(/^Up .+ \(health: starting\)$/);
      expect(await statusOf(sick)).toMatch(/^Up .+ \(unhealthy\)$/);
      // `health_status` matches `health_status: unhealthy`: Docker's filter takes the action's part before the colon.
      expect(await actionsOf(sick, since, 1, { actions: ['health_status'] })).toEqual(['health_status: unhealthy']);
      // When the check made it unhealthy: after the container started, and no later than now.
      const sickNow = await engine.inspectContainer(sick);
      expect(sickNow.unhealthySinceMs).toBeGreaterThanOrEqual(sickNow.startedAtMs!);
      expect(sickNow.unhealthySinceMs).toBeLessThanOrEqual(Date.now());
      expect((await engine.inspectContainer(later)).unhealthySinceMs).toBeNull();
      await engine.stopContainer(later, 5);
      // A stopped container is not healthy, and no failing check made it so.
      expect(await engine.inspectContainer(later)).toMatchObject({ health: 'unhealthy', unhealthySinceMs: null });
    });

    it('starts and stops idempotently, restarts, renames, and removes a running container only by force', async () => {
      const { engine } = host();
      const id = await run('c');
      // Already running: no error, and the engine's 304 says so (a recovery then keeps its RestartCount).
      expect(await engine.startContainer(id)).toBe(false);
      await engine.stopContainer(id, 5);
      await engine.stopContainer(id, 5); // already stopped: no error
      expect(await engine.startContainer(id)).toBe(true);
      await engine.restartContainer(id, 5);
      expect((await engine.inspectContainer(id)).status).toBe('running');

      await engine.renameContainer(id, scope.name('renamed'));
      expect((await engine.inspectContainer(scope.name('renamed'))).id).toBe(id);
      expect(await verdict(engine.inspectContainer(scope.name('c')))).toEqual(GONE);
      const other = await create('other');
      expect(await verdict(engine.renameContainer(other, scope.name('renamed')))).toEqual({ status: 409, isNotFound: false });
      expect(await verdict(engine.renameContainer(other, scope.name('other')))).toEqual({ status: 400, isNotFound: false });

      expect(await verdict(engine.removeContainer(id))).toEqual({ status: 409, isNotFound: false });
      await expect(ignoreNotFound(engine.removeContainer(id))).rejects.toThrow(DockerError); // a refusal is not "gone"
      await engine.removeContainer(id, { force: true });
      expect(await verdict(engine.inspectContainer(id))).toEqual(GONE);
      await ignoreNotFound(engine.removeContainer(id)); // removing what is gone is done
    });

    it('answers 404 for a container, image or network that does not exist, and never for anything else', async () => {
      const { engine } = host();
      const missing = scope.name('missing');
      const calls: (() => Promise<unknown>)[] = [
        () => engine.inspectContainer(missing),
        () => engine.startContainer(missing),
        () => engine.stopContainer(missing),
        () => engine.restartContainer(missing),
        () => engine.removeContainer(missing, { force: true }),
        () => engine.renameContainer(missing, scope.name('x')),
        () => engine.containerLogs(missing),
        () =>
          engine.containerLogsBetween(missing, { sinceMs: 0, untilMs: Date.now() }, { keepBytes: 9, maxReadBytes: 9, timeoutMs: 10_000 }),
        () => engine.createContainer({ name: scope.name('x'), image: `${scope.repo}missing:1` }),
      ];
      for (const call of calls) expect(await verdict(call())).toEqual(GONE);
      await create('c');
      expect(await verdict(create('c'))).toEqual({ status: 409, isNotFound: false }); // the name is taken
      // An id or name Docker could never have made is refused (400), never read as gone.
      for (const bad of ['', '../x', 'a b'])
        expect(await verdict(engine.inspectContainer(bad))).toEqual({ status: 400, isNotFound: false });
      expect(await verdict(engine.containerLogs(''))).toEqual({ status: 400, isNotFound: false });
      expect(await verdict(engine.removeVolume('../x'))).toEqual({ status: 400, isNotFound: false });
      expect(await verdict(engine.removeNetwork(''))).toEqual({ status: 400, isNotFound: false });
      expect(await verdict(engine.removeImage('a//b'))).toEqual({ status: 400, isNotFound: false });
    });

    it("creates under the runtime a container names, the engine's default otherwise, and refuses one it does not list", async () => {
      const { engine } = host();
      const { names, defaultRuntime } = await engine.runtimes();
      expect(names).toContain(defaultRuntime);
      const confined = await create('confined', { confined: { readonlyRootfs: true, runtime: defaultRuntime } });
      expect((await engine.inspectContainer(confined)).runtime).toBe(defaultRuntime);
      expect((await engine.inspectContainer(await create('plain'))).runtime).toBe(defaultRuntime);
      const refused = create('refused', { confined: { readonlyRootfs: true, runtime: 'no-such-runtime' } });
      expect(await verdict(refused)).toEqual({ status: 400, isNotFound: false });
      expect(await verdict(engine.inspectContainer(scope.name('refused')))).toEqual(GONE);
    });
  });

  describe('the restart policy', () => {
    it('restarts a crashed container: a die with its exit code, a start, RestartCount one higher, the times in order', async () => {
      const { engine } = host();
      const id = await run('c', { restartPolicy: 'unless-stopped' });
      for (const count of [1, 2]) {
        const beforeCrash = await mark();
        await host().crash(id);
        const back = await waitFor(`restart ${count}`, async () => restarted(await engine.inspectContainer(id), count), SETTLE_MS, 20);
        expect(back.exitCode).toBe(0); // a restart clears the exit code: only the die event keeps it
        expect(back.finishedAtMs).toBeGreaterThanOrEqual(beforeCrash);
        expect(back.startedAtMs).toBeGreaterThan(back.finishedAtMs!);
        expect(back.startedAtMs).toBeLessThanOrEqual(Date.now());
        expect(await actionsOf(id, beforeCrash, 2, { types: ['container'] })).toEqual(['die 137', 'start']);
      }
    });

    it("stops a container the policy is about to restart: no kill, no die, the crash's exit code and time kept", async () => {
      const { engine } = host();
      const id = await run('c', { restartPolicy: 'unless-stopped' });
      // Docker doubles its restart delay after each short run (100, 200, 400 ms …): the fourth waits 800 ms.
      for (const count of [1, 2, 3]) {
        await host().crash(id);
        await waitFor(`restart ${count}`, async () => restarted(await engine.inspectContainer(id), count), SETTLE_MS, 20);
      }
      const beforeCrash = await mark();
      await host().crash(id);
      const waiting = await waitFor(
        'the restart delay',
        async () => {
          const [c, listed] = await Promise.all([engine.inspectContainer(id), engine.listContainers(scope.labels)]);
          // The list is a snapshot the engine updates after the inspect's state: both are asked until both agree.
          return c.status === 'restarting' && listed[0].status.startsWith('Restarting') && { ...c, listedStatus: listed[0].status };
        },
        SETTLE_MS,
        10,
      );
      const beforeStop = await mark();
      await engine.stopContainer(id, 5);
      expect(waiting).toMatchObject({ exitCode: 137, restartCount: 4, pid: 0 }); // counted at the death
      expect(waiting.listedStatus).toMatch(/^Restarting \(137\) /);
      const stopped = await engine.inspectContainer(id);
      expect(stopped).toMatchObject({ status: 'exited', exitCode: 137, restartCount: 4 });
      // The time of the process's exit, which the engine may only learn after it marked the container restarting.
      expect(stopped.finishedAtMs).toBeGreaterThanOrEqual(beforeCrash);
      expect(stopped.finishedAtMs).toBeLessThanOrEqual(waiting.finishedAtMs!);
      expect(await actionsOf(id, beforeStop, 1)).toEqual(['stop']);
    });

    it('leaves a crashed container without a restart policy exited, with its exit code', async () => {
      const { engine } = host();
      const id = await run('c');
      const beforeCrash = await mark();
      await host().crash(id);
      const dead = await waitFor('the exit', async () => {
        const c = await engine.inspectContainer(id);
        return c.status === 'exited' && c;
      });
      expect(dead).toMatchObject({ exitCode: 137, restartCount: 0, pid: 0 });
      expect(dead.finishedAtMs).toBeGreaterThanOrEqual(beforeCrash);
      expect((await engine.listContainers(scope.labels))[0].status).toMatch(/^Exited \(137\) /);
      expect(await actionsOf(id, beforeCrash, 1)).toEqual(['die 137']);
    });

    it('counts a stop, a start and a restart as no crash: a manual start or restart sets RestartCount back to 0', async () => {
      const { engine } = host();
      const id = await run('c', { restartPolicy: 'unless-stopped' });
      const crashed = async () => {
        await host().crash(id);
        await waitFor('the restart', async () => restarted(await engine.inspectContainer(id), 1), SETTLE_MS, 20);
      };
      await crashed();
      const beforeStop = await mark();
      await engine.stopContainer(id, 5);
      expect(await engine.inspectContainer(id)).toMatchObject({ status: 'exited', exitCode: 143, restartCount: 1 });
      await engine.startContainer(id);
      expect(await engine.inspectContainer(id)).toMatchObject({ status: 'running', restartCount: 0 });
      expect(await actionsOf(id, beforeStop, 4)).toEqual(['kill 15', 'die 143', 'stop', 'start']);

      await crashed();
      const beforeRestart = await mark();
      await engine.restartContainer(id, 5);
      expect(await engine.inspectContainer(id)).toMatchObject({ status: 'running', restartCount: 0 });
      expect(await actionsOf(id, beforeRestart, 5)).toEqual(['kill 15', 'die 143', 'stop', 'start', 'restart']);

      const beforeRemove = await mark();
      await engine.removeContainer(id, { force: true });
      expect(await actionsOf(id, beforeRemove, 3)).toEqual(['kill 9', 'die 137', 'destroy']); // no stop event
    });
  });

  describe('logs', () => {
    it('reads the last lines, and the lines written between two times, keeping only the last bytes asked for', async () => {
      const { engine } = host();
      const id = await run('c');
      const written = async (line: string) => {
        await host().write(id, line);
        // The engine stamps a line when it reads it from the container: once it is in the log, its time is behind us.
        await waitFor(`"${line}" in the log`, async () => (await engine.containerLogs(id, 1)) === `${line}\n`);
      };
      const start = Date.now();
      await written('first');
      const from = await mark();
      await written('second');
      const to = await mark();
      await written('third');
      const all = { sinceMs: start, untilMs: Date.now() };
      const limits = { keepBytes: 1000, maxReadBytes: 1000, timeoutMs: 10_000 };

      expect(await engine.containerLogs(id, 2)).toBe('second\nthird\n');
      expect(await engine.containerLogsBetween(id, { sinceMs: from, untilMs: to }, limits)).toEqual({ text: 'second\n', complete: true });
      expect(await engine.containerLogsBetween(id, all, { ...limits, keepBytes: 7 })).toEqual({ text: '\nthird\n', complete: true });
      expect((await engine.containerLogsBetween(id, all, { ...limits, maxReadBytes: 10 })).complete).toBe(false);
    });
  });

  describe('volumes', () => {
    it('creates with labels (again is no error), lists by strict prefix, and refuses (409) to remove one a container has', async () => {
      const { engine } = host();
      const volume = scope.name('v-a');
      const since = Date.now();
      await engine.createVolume(volume, { 'kc.kind': 'workspace' });
      await engine.createVolume(volume, { 'kc.kind': 'other' }); // exists: kept as it was
      await engine.createVolume(`x${scope.name('v-b')}`); // holds the prefix, but does not start with it
      const listed = await engine.listVolumes(scope.name('v-'));
      expect(listed.map((v) => [v.name, v.labels])).toEqual([[volume, { 'kc.kind': 'workspace' }]]);
      expect(listed[0].createdAt).toBeGreaterThanOrEqual(Math.floor(since / 1000));

      // A container's mount of a volume that does not exist creates it; a stopped container still holds its volumes.
      const id = await create('c', {
        volumes: [
          { name: volume, target: '/a' },
          { name: scope.name('v-mounted'), target: '/b' },
        ],
      });
      expect((await engine.listVolumes(scope.name('v-'))).map((v) => v.name).sort()).toEqual([volume, scope.name('v-mounted')].sort());
      expect(await verdict(engine.removeVolume(volume))).toEqual({ status: 409, isNotFound: false });
      await engine.removeContainer(id);
      await engine.removeVolume(volume);
      expect(await verdict(engine.removeVolume(volume))).toEqual(GONE);
      await engine.removeVolume(`x${scope.name('v-b')}`);
    });
  });

  describe('networks', () => {
    it('creates a network once, with its options and labels, and reports as attached only the running containers on it', async () => {
      const { engine } = host();
      const name = scope.name('net');
      const since = Date.now();
      const options = { 'com.docker.network.bridge.enable_icc': 'false' };
      const id = await engine.ensureNetwork(name, { internal: true, labels: scope.labels, options });
      expect(await engine.ensureNetwork(name)).toBe(id);
      expect(await engine.listNetworks(scope.name(''))).toEqual([{ id, name }]);
      const net = await engine.inspectNetwork(name);
      expect(net).toMatchObject({ id, name, internal: true, labels: scope.labels, containers: [] });
      expect(net.options).toMatchObject(options);
      expect(net.createdAt).toBeGreaterThanOrEqual(Math.floor(since / 1000));

      const c = await create('c', { network: name });
      expect((await engine.inspectContainer(c)).networks).toEqual([name]);
      expect((await engine.inspectNetwork(id)).containers).toEqual([]); // configured, not attached
      await engine.startContainer(c);
      const attached = (await engine.inspectNetwork(id)).containers;
      expect(attached).toEqual([{ id: c, name: scope.name('c'), ipv4: expect.stringMatching(/^\d+\.\d+\.\d+\.\d+$/) }]);
      const usage = (await engine.listContainerUsage()).find((u) => u.id === c);
      expect(usage).toMatchObject({ name: scope.name('c'), state: 'running', image: host().image, networks: [name], volumes: [] });
      expect(await engine.imageExists(usage!.imageId)).toBe(true);
      // A usage is the list's summary too: the looks read labels and status from it (src/watch/engine-view.ts).
      const summary = (await engine.listContainers(scope.labels)).find((s) => s.id === c)!;
      expect(usage).toMatchObject({ status: summary.status, labels: summary.labels, createdAt: summary.createdAt });

      const none = await create('none', { network: 'none' });
      expect((await engine.inspectContainer(none)).networks).toEqual(['none']);
      expect(await verdict(engine.inspectNetwork(scope.name('missing')))).toEqual(GONE);
    });

    it('connects and disconnects (twice is refused, never as gone), and removes a network only when no running container is on it', async () => {
      const { engine } = host();
      const [first, second] = [scope.name('net-1'), scope.name('net-2')];
      await engine.ensureNetwork(first);
      await engine.ensureNetwork(second);
      const c = await run('c', { network: first });
      await engine.connectNetwork(second, c);
      expect((await engine.inspectContainer(c)).networks.sort()).toEqual([first, second].sort());
      expect(await verdict(engine.connectNetwork(second, c))).toEqual({ status: 403, isNotFound: false });
      await engine.disconnectNetwork(second, c);
      expect((await engine.inspectNetwork(second)).containers).toEqual([]);
      // Docker answers 500 when the container is not on the network, with force too, and even when the network is gone.
      expect(await verdict(engine.disconnectNetwork(second, c, true))).toEqual({ status: 500, isNotFound: false });
      expect(await verdict(engine.disconnectNetwork(scope.name('missing'), c, true))).toEqual({ status: 500, isNotFound: false });
      expect(await verdict(engine.connectNetwork(second, scope.name('missing')))).toEqual(GONE);

      expect(await verdict(engine.removeNetwork(first))).toEqual({ status: 403, isNotFound: false }); // active endpoints
      await engine.stopContainer(c, 5);
      await engine.removeNetwork(first); // a stopped container is only configured on it
      expect(await verdict(engine.removeNetwork(first))).toEqual(GONE);
    });

    it('creates a container on a network that does not exist, and fails its start with a 404', async () => {
      const { engine } = host();
      const c = await create('c', { network: scope.name('missing') });
      expect((await engine.inspectContainer(c)).networks).toEqual([scope.name('missing')]);
      expect(await verdict(engine.startContainer(c))).toEqual(GONE);
      const after = await engine.inspectContainer(c);
      expect(after.status).toBe('created');
      expect(after.error).toContain(`network ${scope.name('missing')} not found`);
    });
  });

  describe('images', () => {
    it('tells whether an image exists, lists the dangling ones and those tagged under a prefix, and removes them', async () => {
      const { engine } = host();
      const tag = `${scope.repo}svc:1`;
      const tagged = await host().makeImage(tag, scope.labels);
      await host().makeImage(`${scope.repo}team/svc:1`, scope.labels); // a path below the prefix: not under it
      const dangling = await host().makeImage(null, scope.labels);

      expect(await engine.imageExists(tag)).toBe(true);
      expect(await engine.imageExists(tagged)).toBe(true);
      expect(await engine.imageExists(`${scope.repo}missing:1`)).toBe(false);
      const under = await engine.listImagesUnder(scope.repo);
      expect(under.map((i) => [i.id, i.repoTags])).toEqual([[tagged, [tag]]]);
      expect(under[0].createdAt).toBeGreaterThan(0);
      const danglingOfTest = (await engine.listDanglingImages()).filter((i) => i.labels[RUN_LABEL] === scope.labels[RUN_LABEL]);
      expect(danglingOfTest.map((i) => i.id)).toEqual([dangling]);

      const user = await create('user', { image: tag, cmd: ['true'] });
      expect(await verdict(engine.removeImage(tag))).toEqual({ status: 409, isNotFound: false }); // a container uses it
      await engine.removeContainer(user);
      await engine.removeImage(tag);
      expect(await engine.imageExists(tagged)).toBe(false);
      await engine.removeImage(dangling);
      expect(await verdict(engine.removeImage(dangling))).toEqual(GONE);
    });
  });

  describe('a wedged engine', () => {
    it('fails each call it leaves unanswered past its deadline, never as gone and saying so, and answers again once it wakes', async () => {
      const id = await create('wedged');
      const w = await host().wedgeable();
      try {
        w.wedge();
        const startedAt = Date.now();
        const errors = await Promise.all([
          failure(w.engine.listContainerUsage()),
          failure(w.engine.inspectContainer(id)),
          failure(w.engine.ping()),
        ]);
        expect(Date.now() - startedAt).toBeGreaterThanOrEqual(w.readDeadlineMs - 50);
        for (const err of errors) {
          expect({ status: err.status, isNotFound: isNotFound(err), silent: isEngineSilent(err) }).toEqual({
            status: undefined,
            isNotFound: false,
            silent: true,
          });
          expect(err.message).toBe(`docker ${err.operation}: the engine did not answer within ${w.readDeadlineMs / 1000} s`);
        }
        expect(errors.map((e) => e.operation)).toEqual(['container.list', 'container.inspect', 'ping']);
        w.release();
        expect((await w.engine.inspectContainer(id)).status).toBe('created');
      } finally {
        w.release();
        await w.close();
      }
    });
  });

  describe('events', () => {
    it('reads the events between two times, filtered by label, type and action, in order', async () => {
      const { engine } = host();
      const before = await create('before');
      const since = await mark();
      const inside = await run('inside');
      await engine.createVolume(scope.name('v')); // a volume event: no container labels
      const until = await mark();
      await create('after');

      const read = (q: Partial<EventQuery>) => engine.readEvents({ since: secs(since), until: secs(until), ...q });
      const events = await read({ labels: scope.labels });
      expect(events.map((e) => [e.id, e.type, e.action])).toEqual([
        [inside, 'container', 'create'],
        [inside, 'container', 'start'],
      ]);
      expect(events[0].attributes).toMatchObject({ ...scope.labels, name: scope.name('inside'), image: host().image });
      for (const e of events) expect(nanosInMs(e)).toBeGreaterThanOrEqual(since);
      expect((await read({ labels: scope.labels, actions: ['start'] })).map((e) => e.id)).toEqual([inside]);
      expect(await read({ labels: { [RUN_LABEL]: 'someone-else' } })).toEqual([]);
      expect((await read({ types: ['volume'] })).filter((e) => e.id === scope.name('v')).map((e) => e.action)).toEqual(['create']);
      expect((await read({ types: ['container'] })).some((e) => e.id === before)).toBe(false);
    });

    it('follows new events until closed; from `since` it first replays the past, without it only what comes', async () => {
      const { engine } = host();
      const since = Date.now();
      const before = await create('before');
      const fromNow: DockerEvent[] = [];
      const fromSince: DockerEvent[] = [];
      const query = { labels: scope.labels, types: ['container'] };
      const live = await engine.streamEvents(query, (e) => fromNow.push(e));
      const replaying = await engine.streamEvents({ ...query, since: secs(since) }, (e) => fromSince.push(e));
      const during = await create('during');
      const seen = (events: DockerEvent[], id: string) => events.some((e) => e.id === id && e.action === 'create');
      await waitFor('both streams to see the create', () => seen(fromNow, during) && seen(fromSince, during));
      expect(fromSince.map((e) => e.id)).toEqual([before, during]);
      expect(fromNow.map((e) => e.id)).toEqual([during]);

      live.close();
      await live.done;
      const after = await create('after');
      await waitFor('the replaying stream to see it', () => seen(fromSince, after));
      expect(fromNow.map((e) => e.id)).toEqual([during]); // closed: nothing more
      replaying.close();
      await replaying.done;
    });

    it("ends an open stream, or refuses to open one, with a transient error when the request's signal aborts", async () => {
      const { engine } = host();
      const aborting = new AbortController();
      const stream = await engine.streamEvents({ labels: scope.labels, signal: aborting.signal }, () => undefined);
      aborting.abort();
      expect(await verdict(stream.done)).toEqual({ status: undefined, isNotFound: false });
      // A signal aborted before the request is sent fails the request itself.
      expect(await verdict(engine.streamEvents({ signal: aborting.signal }, () => undefined))).toEqual({
        status: undefined,
        isNotFound: false,
      });
    });
  });
}

const nanosInMs = (e: DockerEvent) => Number(e.timeNano / 1_000_000n);

/** The container once the restart policy has started it again for the `count`th time; false before. */
const restarted = (c: ContainerDetails, count: number) => c.status === 'running' && c.restartCount === count && c;

/** Removes, through the engine, every container, image, volume and network the test made. */
async function removeWhatTheTestMade(engine: Engine, scope: Scope): Promise<void> {
  const prefix = scope.name('');
  for (const c of await engine.listContainers({})) if (c.name.startsWith(prefix)) await engine.removeContainer(c.id, { force: true });
  const tagged = [...(await engine.listImagesUnder(scope.repo)), ...(await engine.listImagesUnder(`${scope.repo}team/`))];
  for (const i of tagged) await ignoreNotFound(engine.removeImage(i.id));
  const dangling = (await engine.listDanglingImages()).filter((i) => i.labels[RUN_LABEL] === scope.labels[RUN_LABEL]);
  for (const i of dangling) await ignoreNotFound(engine.removeImage(i.id));
  for (const v of [...(await engine.listVolumes(prefix)), ...(await engine.listVolumes(`x${prefix}`))]) await engine.removeVolume(v.name);
  for (const n of await engine.listNetworks(prefix)) await engine.removeNetwork(n.id);
}
