/** `npm run demo` narrates a crash loop up to the open circuit, and leaves nothing behind. */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect, it } from 'vitest';
import { DockerClient } from '../../src/docker/client';
import { embeddedPortsForFile } from '../helpers/embedded-ports';
import { TEST_TENANT_RUNTIME } from '../helpers/fixtures';

embeddedPortsForFile();

it('narrates crashes and the open circuit, then cleans up', async () => {
  const demo = spawn(process.execPath, [path.join(__dirname, '..', '..', 'dist', 'demo.js'), '--exit-after-open'], {
    // The main engine has no gVisor: the demo's services run under the tests' runtime (see TEST_TENANT_RUNTIME).
    env: { ...process.env, TEMPORAL_ADDRESS: '', KEEPER_TENANT_RUNTIME: TEST_TENANT_RUNTIME },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  demo.stdout.on('data', (d) => (out += d));
  demo.stderr.on('data', (d) => (out += d));
  const code = await new Promise<number | null>((resolve) => demo.on('exit', resolve));
  expect(out, out).toMatch(/crash\(es\) counted in the window/);
  expect(out).toMatch(/flaky: circuit OPEN \(opening 1, escalation 1\)/);
  expect(out).toMatch(/a durable timer will retry at \d\d:\d\d:\d\d UTC; workflow keeper-demo-\d+-circuit-[0-9a-f]{32}/);
  expect(out).toMatch(/npx keeper circuit reset [0-9a-f]{32} --db \S+ --host-id demo-\d+/);
  expect(out).toMatch(/done\n$/);
  expect(code).toBe(0);
  expect(await new DockerClient().listContainers({ 'ah.tenant': 'demo' })).toEqual([]);
}, 240_000);
