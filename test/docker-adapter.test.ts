/**
 * What keeper's Docker adapter itself does, against the real engine: one list call per look, the runtimes it reads,
 * how it classifies errors and how it reads the event stream. What the loops rely on any engine to do is the Engine
 * contract (test/engine/contract.ts), which runs against a real engine of its own and the in-memory double.
 */
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

describe('deadlines, on an engine a proxy wedges (it takes every request and answers none)', () => {
  let proxy: DockerProxy;
  beforeAll(async () => (proxy = await DockerProxy.start()));
  afterAll(() => proxy.close());
  afterEach(() => proxy.release());
  const deadlines = { readMs: 400, changeMs: 700, stopMarginMs: 500 };

  /** How long `p` took to fail, and its error. */
  const timed = async (p: Promise<unknown>) => {
    const startedAt = Date.now();
    const err = await failure(p);
    return { ms: Date.now() - startedAt, err };
  };

  it('gives a read, a change and a stop (its grace and a margin) each its own, and closes the request it gives up on', async () => {
    const id = await engine.run({ name: uniqueId('ah-c-') });
    const client = new DockerClient(proxy.dockerHost, { deadlines });
    proxy.wedge();
    const [read, change, stop] = await Promise.all([
      timed(client.inspectContainer(id)),
      timed(client.renameContainer(id, uniqueId('ah-renamed-'))),
      timed(client.stopContainer(id, 1)),
    ]);
    expect(read.err.message).toBe('docker container.inspect: the engine did not answer within 0.4 s');
    expect(change.err.message).toBe('docker container.rename: the engine did not answer within 0.7 s');
    expect(stop.err.message).toBe('docker container.stop: the engine did not answer within 1.5 s');
    for (const { err } of [read, change, stop]) expect(err).toMatchObject({ status: undefined, isNotFound: false });
    expect(read.ms).toBeGreaterThanOrEqual(390);
    expect(change.ms).toBeGreaterThanOrEqual(690);
    expect(stop.ms).toBeGreaterThanOrEqual(1490);
    // The proxy held three requests; each was closed by the client when its deadline passed.
    expect(proxy.requests.filter((r) => r.injected)).toHaveLength(3);
    await waitFor('the given-up requests closed', () => proxy.heldRequests === 0, 10_000, 20);
    proxy.release();
    expect((await client.inspectContainer(id)).status).toBe('running'); // nothing was stopped: the engine never heard
  });

  it("a one-shot command's client pings first, and once the engine has not answered, sends nothing more", async () => {
    const client = new DockerClient(proxy.dockerHost, { deadlines, oneShot: true });
    proxy.wedge();
    const first = await timed(client.listContainers({}));
    expect(first.err.message).toBe('docker container.list: not sent: the engine did not answer ping within 0.4 s');
    expect(first.ms).toBeGreaterThanOrEqual(390);
    const asked = proxy.requests.length;
    const later = await timed(client.stopContainer('c1', 10));
    expect(later.err.message).toBe('docker container.stop: not sent: the engine did not answer ping within 0.4 s');
    expect(later.ms).toBeLessThan(100);
    expect(proxy.requests.length).toBe(asked); // the later call reached no engine
    expect(proxy.requests.at(-1)?.path).toBe('/_ping');
  });

  it("a one-shot command's client that the engine answers makes each call after one ping", async () => {
    const client = new DockerClient(proxy.dockerHost, { deadlines, oneShot: true });
    const asked = proxy.requests.length;
    await client.listContainers({});
    await client.listVolumes();
    expect(proxy.requests.slice(asked).map((r) => r.path)).toEqual(['/_ping', '/containers/json', '/volumes']);
  });
});

describe('events', () => {
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
