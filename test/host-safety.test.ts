/**
 * The host-safety check of global teardown (test/helpers/host-state.ts) must catch what it exists for: a
 * container a test left on the main engine or on its lane's engine (test/helpers/lanes.ts), and a bridge a test
 * deleted. The bridge is made and deleted in a network namespace of this test's own, so the host itself is never
 * touched.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { DockerClient } from '../src/docker/client';
import { TEST_IMAGE, uniqueId } from './helpers/fixtures';
import { captureHostState, diffHostState, processesOfRun, RUN_TAG_VARIABLE } from './helpers/host-state';
import { laneEngine, laneLeftovers, recordLaneStart } from './helpers/lanes';

const netns = uniqueId('keeper-hs-');
const docker = new DockerClient();
let leaked: string | undefined;

afterAll(async () => {
  if (leaked) await docker.removeContainer(leaked, { force: true }).catch(() => undefined);
  try {
    execFileSync('ip', ['netns', 'del', netns], { stdio: 'ignore' });
  } catch {
    // the bridge test did not get as far as making it
  }
});

describe('the host-safety check', () => {
  it('reports a container left behind on the main engine, and nothing once it is gone', async () => {
    const before = await captureHostState();
    const name = uniqueId('keeper-leak-');
    leaked = await docker.createContainer({ name, image: TEST_IMAGE, cmd: ['true'], network: 'none' });
    const during = diffHostState(before, await captureHostState());
    expect(during).toEqual([`containers: left behind ${name} ${leaked.slice(0, 12)}`]);
    await docker.removeContainer(leaked, { force: true });
    leaked = undefined;
    expect(diffHostState(before, await captureHostState())).toEqual([]);
  });

  it("reports a container a file left on its lane's engine, and nothing once it is gone", async () => {
    // Lane 1's engine: the parallel group's, idle by now (or started here when this file runs alone).
    const engine = laneEngine(1);
    await recordLaneStart(engine);
    const lane = new DockerClient(engine.dockerHost);
    const name = uniqueId('keeper-lane-leak-');
    const id = await lane.createContainer({ name, image: TEST_IMAGE, cmd: ['true'], network: 'none' });
    try {
      expect(await laneLeftovers(process.env[RUN_TAG_VARIABLE]!)).toEqual([`lane1: containers: left behind ${name} ${id.slice(0, 12)}`]);
    } finally {
      await lane.removeContainer(id, { force: true });
    }
    expect(await laneLeftovers(process.env[RUN_TAG_VARIABLE]!)).toEqual([]);
  });

  it('reports a deleted bridge, with its address route', async () => {
    execFileSync('ip', ['netns', 'add', netns]);
    const ip = (...args: string[]) => execFileSync('ip', ['-n', netns, ...args]);
    ip('link', 'add', 'br-probe', 'type', 'bridge');
    ip('addr', 'add', '10.99.0.1/24', 'dev', 'br-probe');
    ip('link', 'set', 'br-probe', 'up');
    const before = await captureHostState({ netns });
    ip('link', 'del', 'br-probe');
    const changes = diffHostState(before, await captureHostState({ netns }));
    expect(changes).toContain('interfaces: gone br-probe (ether)');
    expect(changes.some((c) => c.startsWith('routes: gone') && c.includes('10.99.0.0/24 dev br-probe'))).toBe(true);
  });

  it('finds a process of this run by its tag, and not one started without it', async () => {
    const tag = process.env[RUN_TAG_VARIABLE]!;
    const tagged = execFileSync('sh', ['-c', 'sleep 30 >/dev/null 2>&1 & echo $!'], { encoding: 'utf8' }).trim();
    const untagged = execFileSync('sh', ['-c', 'sleep 30 >/dev/null 2>&1 & echo $!'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH },
    }).trim();
    try {
      const pids = processesOfRun(tag).map((p) => String(p.pid));
      expect(pids).toContain(tagged);
      expect(pids).not.toContain(untagged);
    } finally {
      process.kill(Number(tagged), 'SIGKILL');
      process.kill(Number(untagged), 'SIGKILL');
    }
  });
});
