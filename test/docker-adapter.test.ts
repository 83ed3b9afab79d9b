/**
 * What keeper's Docker adapter itself does, against the real engine: one list call per look, the runtimes it reads,
 * how it classifies errors and how it reads the event stream. What the loops rely on any engine to do is the Engine
 * contract (test/engine/contract.ts), which runs against a real engine of its own and the in-memory double.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DockerClient } from '../src/docker/client';
import { DockerError } from '../src/docker/errors';
import { DockerProxy } from './helpers/docker-proxy';
import { EngineFixture, TEST_IMAGE, uniqueId } from './helpers/fixtures';

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
