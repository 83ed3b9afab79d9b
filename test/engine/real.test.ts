/**
 * The Engine contract (test/engine/contract.ts) against a real Docker engine of this file's own, through keeper's
 * adapter (src/docker/client.ts). A crash is a SIGKILL of the container's main process from the host, as the
 * kernel would send it; a log line is written to the main process's stdout from inside the container; images are
 * imported from a one-file tar; a wedged engine is a proxy in front of it that holds every request. Nothing is mocked.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe } from 'vitest';
import { DockerClient } from '../../src/docker/client';
import { crashContainer } from '../helpers/crash';
import { DockerProxy, engineSocket } from '../helpers/docker-proxy';
import { extraEngine, stopEngine, type ExtraEngine } from '../helpers/engines';
import { TEST_IMAGE, tempDir } from '../helpers/fixtures';
import { engineContract, type ContractHost } from './contract';

let engine: ExtraEngine | undefined;
let host: ContractHost;

beforeAll(() => {
  engine = extraEngine('engine-contract');
  const dockerHost = engine.dockerHost;
  const docker = new DockerClient(dockerHost);
  const cli = (args: string[], input?: Buffer) =>
    execFileSync('docker', ['-H', dockerHost, ...args], {
      input,
      encoding: 'utf8',
      timeout: 60_000,
      stdio: ['pipe', 'pipe', 'pipe'],
    }).trim();
  const rootfs = tempDir('keeper-contract-');
  fs.writeFileSync(path.join(rootfs, 'file'), 'one file\n');
  const layer = execFileSync('tar', ['-c', '-C', rootfs, '.']);
  host = {
    engine: docker,
    image: TEST_IMAGE,
    crash: (id) => crashContainer(docker, id),
    write: async (id, line) => void cli(['exec', id, 'sh', '-c', `echo '${line}' > /proc/1/fd/1`]),
    checkHealth: async () => undefined, // the engine runs the container's check itself
    makeImage: async (ref, labels) => {
      const label = Object.entries(labels).map(([k, v]) => `${JSON.stringify(k)}=${JSON.stringify(v)}`);
      return cli(['import', '--change', `LABEL ${label.join(' ')}`, '-', ...(ref ? [ref] : [])], layer);
    },
    wedgeable: async () => {
      const proxy = await DockerProxy.start(engineSocket(dockerHost));
      const readDeadlineMs = 1000;
      return {
        engine: new DockerClient(proxy.dockerHost, { deadlines: { readMs: readDeadlineMs } }),
        readDeadlineMs,
        wedge: () => proxy.wedge(),
        release: () => proxy.release(),
        close: () => proxy.close(),
      };
    },
  };
});

afterAll(() => {
  if (engine) stopEngine(engine);
});

describe('the Engine contract, on a real engine', () => engineContract(() => host));
