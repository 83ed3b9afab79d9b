/** The Docker adapter against the real engine: what the loops rely on, and how errors are classified. */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DockerClient } from '../src/docker/client';
import { DockerError } from '../src/docker/errors';
import { DockerProxy } from './helpers/docker-proxy';
import { EngineFixture, TEST_IMAGE, uniqueId, waitFor } from './helpers/fixtures';

const engine = new EngineFixture();
const docker = engine.docker;
afterEach(() => engine.cleanup());

async function failure(p: Promise<unknown>): Promise<DockerError> {
  try {
    await p;
  } catch (err) {
    return err as DockerError;
  }
  throw new Error('expected a DockerError');
}

describe('containers', () => {
  it('lists by label on the server in one call, with labels, state and creation time', async () => {
    const tag = uniqueId('lbl-');
    const running = await engine.run({ name: uniqueId('ah-c-'), labels: { 'keeper.test': tag, 'ah.service': 's1' } });
    const stopped = await engine.run({ name: uniqueId('ah-c-'), labels: { 'keeper.test': tag } }, false);
    await engine.run({ name: uniqueId('other-'), labels: { 'keeper.test': 'someone-else' } });
    docker.resetCalls();

    const all = await docker.listContainers({ 'keeper.test': tag });
    expect(docker.calls.get('container.list')).toBe(1);
    expect(all.map((c) => c.id).sort()).toEqual([running, stopped].sort());
    const withService = await docker.listContainers({ 'keeper.test': tag, 'ah.service': true });
    expect(withService.map((c) => c.id)).toEqual([running]);
    const r = all.find((c) => c.id === running)!;
    expect(r).toMatchObject({ state: 'running', image: TEST_IMAGE, labels: { 'ah.service': 's1' } });
    expect(Math.abs(r.createdAt - Date.now() / 1000)).toBeLessThan(120);
    expect(all.find((c) => c.id === stopped)!.state).toBe('created');
  });

  it('inspects exit code, restart count and health', async () => {
    const id = await engine.run({
      name: uniqueId('ah-c-'),
      cmd: ['sh', '-c', 'exit 3'],
      healthcheck: { cmd: ['false'], intervalMs: 1000 },
    });
    const exited = await waitFor('exit', async () => {
      const c = await docker.inspectContainer(id);
      return c.status === 'exited' ? c : undefined;
    });
    expect(exited).toMatchObject({ exitCode: 3, restartCount: 0, image: TEST_IMAGE });
    expect(exited.startedAt).toBeGreaterThan(0);

    const sick = await engine.run({ name: uniqueId('ah-c-'), healthcheck: { cmd: ['false'], intervalMs: 1000, retries: 1 } });
    await waitFor('unhealthy', async () => (await docker.inspectContainer(sick)).health === 'unhealthy');
  });

  it('starts, stops (twice is fine), restarts, renames and removes', async () => {
    const id = await engine.run({ name: uniqueId('ah-c-') }, false);
    await docker.startContainer(id);
    expect((await docker.inspectContainer(id)).status).toBe('running');
    await docker.stopContainer(id, 1);
    await docker.stopContainer(id, 1);
    expect((await docker.inspectContainer(id)).status).toBe('exited');
    await docker.restartContainer(id, 1);
    expect((await docker.inspectContainer(id)).status).toBe('running');
    const name = uniqueId('ah-renamed-');
    await docker.renameContainer(id, name);
    expect((await docker.inspectContainer(id)).name).toBe(name);
    await docker.removeContainer(id, { force: true });
    expect((await failure(docker.inspectContainer(id))).isNotFound).toBe(true);
  });
});

describe('runtimes', () => {
  it("lists the engine's runtimes from docker info, and creates a tenant container under the one it names", async () => {
    const engineRuntimes = await docker.runtimes();
    expect(engineRuntimes.names).toEqual(expect.arrayContaining(['runc', 'io.containerd.runc.v2']));
    expect(engineRuntimes.defaultRuntime).toBe('runc');
    const confined = { readonlyRootfs: false, runtime: 'io.containerd.runc.v2' };
    const id = await engine.run({ name: uniqueId('ah-c-'), confined });
    expect((await docker.inspectContainer(id)).runtime).toBe('io.containerd.runc.v2');
    // A container that names no runtime gets the engine's default, which the engine records.
    expect((await docker.inspectContainer(await engine.run({ name: uniqueId('ah-c-') }, false))).runtime).toBe('runc');
  });

  it('a runtime the engine does not list fails the create (HTTP 400): nothing falls back to the default', async () => {
    const name = uniqueId('ah-c-');
    const err = await failure(
      docker.createContainer({ name, image: TEST_IMAGE, confined: { readonlyRootfs: false, runtime: 'no-such-runtime' } }),
    );
    expect(err).toMatchObject({ status: 400 });
    expect(err.message).toContain('Unknown runtime specified no-such-runtime');
    expect((await failure(docker.inspectContainer(name))).isNotFound).toBe(true);
  });
});

describe('error classification', () => {
  it('reads 404 as not found, from the status code', async () => {
    const err = await failure(docker.inspectContainer('no-such-container-' + uniqueId()));
    expect(err).toBeInstanceOf(DockerError);
    expect(err).toMatchObject({ status: 404, isNotFound: true });
    expect(err.message).toMatch(/^docker container\.inspect: HTTP 404: /);
  });

  it('reads an unreachable engine as transient, never as gone', async () => {
    const err = await failure(new DockerClient('unix:///nonexistent/docker.sock').listContainers({}));
    expect(err).toMatchObject({ status: undefined, isNotFound: false });
  });

  describe('through a faulty proxy', () => {
    let proxy: DockerProxy;
    beforeAll(async () => (proxy = await DockerProxy.start()));
    afterAll(() => proxy.close());

    it('reads a 500 as transient even when its text says "not found"', async () => {
      const id = await engine.run({ name: uniqueId('ah-c-') });
      proxy.fail({ method: 'GET', path: /^\/containers\/[^/]+\/json$/, status: 500, times: 1 });
      const client = new DockerClient(proxy.dockerHost);
      const err = await failure(client.inspectContainer(id));
      expect(err.message).toContain('No such container');
      expect(err).toMatchObject({ status: 500, isNotFound: false });
      expect((await client.inspectContainer(id)).id).toBe(id); // the rule was used up; the proxy forwards again
    });
  });
});

describe('volumes, networks, images', () => {
  it('lists volumes by strict prefix with their creation time, and never force-removes one in use', async () => {
    const prefix = uniqueId('ah-kt-');
    const vol = await engine.volume(`${prefix}-a`);
    await engine.volume(`x${prefix}-b`); // contains the prefix but does not start with it
    const vols = await docker.listVolumes(prefix);
    expect(vols.map((v) => v.name)).toEqual([vol]);
    expect(Math.abs(vols[0].createdAt - Date.now() / 1000)).toBeLessThan(120);

    await engine.run({ name: uniqueId('ah-c-'), volumes: [{ name: vol, target: '/workspace' }] });
    const err = await failure(docker.removeVolume(vol));
    expect(err.status).toBe(409);
    expect((await docker.inspectVolume(vol)).name).toBe(vol);
  });

  it('reads attached containers from a network inspect, then disconnects and removes', async () => {
    const net = uniqueId('ah-tenant-kt');
    await engine.network(net);
    const id = await engine.run({ name: uniqueId('ah-c-'), network: net });
    const inspected = await docker.inspectNetwork(net);
    expect(inspected.containers.map((c) => c.id)).toEqual([id]);
    await docker.disconnectNetwork(net, id, true);
    expect((await docker.inspectNetwork(net)).containers).toEqual([]);
    await docker.removeNetwork(net);
    expect((await failure(docker.inspectNetwork(net))).isNotFound).toBe(true);
  });

  it('tells an image the engine has from one it lacks', async () => {
    expect(await docker.imageExists(TEST_IMAGE)).toBe(true);
    expect(await docker.imageExists('keeper-test/never-built:latest')).toBe(false);
  });
});

describe('events', () => {
  it('reads a bounded past with since/until, filtered by label', async () => {
    const tag = uniqueId('ev-');
    const since = Math.floor(Date.now() / 1000) - 1;
    const id = await engine.run({ name: uniqueId('ah-c-'), cmd: ['sh', '-c', 'exit 1'], labels: { 'keeper.test': tag } });
    await waitFor('exit', async () => (await docker.inspectContainer(id)).status === 'exited');
    const until = Math.floor(Date.now() / 1000) + 1;
    const events = await docker.readEvents({ since, until, labels: { 'keeper.test': tag } });
    const actions = events.filter((e) => e.id === id).map((e) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['create', 'start', 'die']));
    const die = events.find((e) => e.action === 'die')!;
    expect(die.attributes.exitCode).toBe('1');
    expect(die.timeNano).toBeGreaterThan(BigInt(since) * 1_000_000_000n);
  });

  describe('a stream the engine did not send (a proxy answers /events itself)', () => {
    let proxy: DockerProxy;
    beforeAll(async () => (proxy = await DockerProxy.start()));
    afterAll(() => proxy.close());
    afterEach(() => proxy.clear());
    const line = (id: string, note: string) =>
      `${JSON.stringify({ Type: 'container', Action: 'die', Actor: { ID: id, Attributes: { note } }, timeNano: 1 })}\r\n`;

    it('reads one event per line, whatever the chunks: a line cut in two, a character cut in its bytes', async () => {
      const body = Buffer.from(line('c1', 'héllo ✓') + line('c2', 'ünï'));
      const cutInCheck = body.indexOf(Buffer.from('✓')) + 1; // inside the check mark's three bytes
      proxy.fail({ path: /^\/events$/, status: 200, chunks: [body.subarray(0, cutInCheck), body.subarray(cutInCheck)] });
      const events = await new DockerClient(proxy.dockerHost).readEvents({ since: 0, until: 1 });
      expect(events.map((e) => [e.id, e.attributes.note])).toEqual([
        ['c1', 'héllo ✓'],
        ['c2', 'ünï'],
      ]);
    });

    it('ends at a line that is not JSON, with a one-line error naming it, after the events before it', async () => {
      proxy.fail({
        path: /^\/events$/,
        status: 200,
        chunks: [Buffer.from(`${line('c1', 'ok')}<html>bad gateway</html>\n${line('c2', 'late')}`)],
      });
      const seen: string[] = [];
      const { done } = await new DockerClient(proxy.dockerHost).streamEvents({}, (e) => seen.push(e.id));
      const err = await failure(done);
      expect(err).toBeInstanceOf(DockerError);
      expect(err.message).toBe('docker events: a line is not a JSON event: <html>bad gateway</html>');
      expect(seen).toEqual(['c1']);
    });
  });
});
