/**
 * What both global setups (the whole suite's and `npm run test:fast`'s) start the same way: the workflow bundle,
 * built once from the sources, and the Java time-skipping test server. The JVM gets as long as it needs here;
 * the SDK's own launcher would give it 5 s. No vitest imports: global setup loads this module.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode } from '@temporalio/worker';
import { freePort } from '../../src/temporal/dev-server';
import { WORKFLOWS_PATH } from '../../src/temporal/bundle';
import { KEEPER_SEARCH_ATTRIBUTES } from '../../src/search-attributes';

const ROOT = path.resolve(__dirname, '..', '..');
export const TEST_SERVER_WRAPPER = path.join(ROOT, '.tools', 'bin', 'temporal-test-server');
const JVM_START_TIMEOUT_MS = 60_000;

/** Bundles src/workflows into test/.artifacts/workflow-bundle.js and returns its path. */
export async function writeWorkflowBundle(): Promise<string> {
  const artifacts = path.join(ROOT, 'test', '.artifacts');
  fs.mkdirSync(artifacts, { recursive: true });
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietLogger });
  const bundlePath = path.join(artifacts, 'workflow-bundle.js');
  fs.writeFileSync(bundlePath, code);
  return bundlePath;
}

export interface TimeSkippingServer {
  address: string;
  stop(): void;
}

/** Starts the Java test server on a free port, with keeper's search attributes registered. */
export async function startTimeSkippingServer(): Promise<TimeSkippingServer> {
  const port = await freePort();
  const child = spawn(TEST_SERVER_WRAPPER, [String(port)], { stdio: 'ignore' });
  const stop = () => void child.kill('SIGKILL');
  try {
    await waitForPort(port, JVM_START_TIMEOUT_MS);
    await registerSearchAttributes(`127.0.0.1:${port}`);
  } catch (err) {
    stop();
    throw err;
  }
  return { address: `127.0.0.1:${port}`, stop };
}

/**
 * The Java test server knows only its own Custom* attributes; a child workflow started with KeeperHost or
 * ServiceId would wait for ever for its start to be acknowledged. Register keeper's as the dev server does.
 */
async function registerSearchAttributes(address: string): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const types = temporal.api.enums.v1.IndexedValueType;
    await connection.operatorService.addSearchAttributes({
      namespace: 'default',
      searchAttributes: Object.fromEntries(KEEPER_SEARCH_ATTRIBUTES.map((k) => [k.name, types[`INDEXED_VALUE_TYPE_${k.type}`]])),
    });
  } finally {
    await connection.close();
  }
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const open = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => (s.end(), resolve(true)));
      s.on('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`time-skipping test server did not open port ${port} within ${timeoutMs} ms`);
}

const quietLogger = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error: (m: string) => console.error(m),
};
