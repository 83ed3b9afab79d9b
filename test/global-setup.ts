/**
 * Starts what the whole suite shares, once: the workflow bundle, a Temporal CLI dev server and the Java
 * time-skipping test server. The JVM gets as long as it needs here; the SDK's own launcher would give it 5 s.
 *
 * It also guards the host: setup records the host's state and tags this run's processes; teardown stops
 * everything the run started (servers, extra engines), then fails the run if the host's interfaces, routes,
 * iptables, the main engine's networks, containers or volumes changed, or if a process of the run survives.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { TestProject } from 'vitest/node';
import { freePort, startDevServer, type DevServer } from '../src/temporal/dev-server';
import { WORKFLOWS_PATH } from '../src/temporal/bundle';
import { engineOwner, engineOwners, stopEnginesOf } from './helpers/engines';
import { captureHostState, diffHostState, processesOfRun, RUN_TAG_VARIABLE, type HostState } from './helpers/host-state';

declare module 'vitest' {
  export interface ProvidedContext {
    workflowBundlePath: string;
    devServerAddress: string;
    timeSkippingAddress: string;
    /** This run's tag: in the environment of every process it starts, and in the names of its extra engines. */
    runTag: string;
  }
}

const ROOT = path.resolve(__dirname, '..');
export const TEST_SERVER_WRAPPER = path.join(ROOT, '.tools', 'bin', 'temporal-test-server');

let devServer: DevServer | undefined;
let testServer: ReturnType<typeof spawn> | undefined;
let hostBefore: HostState | undefined;
const runTag = `r${process.pid}`;

export async function setup(project: TestProject): Promise<void> {
  reapEnginesOfDeadRuns();
  hostBefore = await captureHostState();
  process.env[RUN_TAG_VARIABLE] = runTag;
  project.provide('runTag', runTag);
  const artifacts = path.join(ROOT, 'test', '.artifacts');
  fs.mkdirSync(artifacts, { recursive: true });
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietLogger });
  const bundlePath = path.join(artifacts, 'workflow-bundle.js');
  fs.writeFileSync(bundlePath, code);
  project.provide('workflowBundlePath', bundlePath);

  devServer = await startDevServer();
  project.provide('devServerAddress', devServer.address);

  const port = await freePort();
  testServer = spawn(TEST_SERVER_WRAPPER, [String(port)], { stdio: 'ignore' });
  await waitForPort(port, 60_000);
  await registerSearchAttributes(`127.0.0.1:${port}`);
  project.provide('timeSkippingAddress', `127.0.0.1:${port}`);
}

export async function teardown(): Promise<void> {
  testServer?.kill('SIGKILL');
  await devServer?.stop();
  stopEnginesOf(engineOwner(runTag));
  const survivors = await settledProcesses();
  if (!hostBefore) return;
  const changes = diffHostState(hostBefore, await captureHostState());
  const problems = [...changes, ...survivors.map((p) => `processes: still running ${p.pid} ${p.args.slice(0, 160)}`)];
  if (problems.length > 0) {
    // vitest reports an error thrown here but still exits 0: the exit code is set explicitly.
    console.error(`HOST SAFETY: the suite did not leave the host as it found it:\n  ${problems.join('\n  ')}`);
    process.exitCode = 1;
  }
}

/** The run's processes, given a bounded time to exit after their owners were stopped. */
async function settledProcesses() {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const left = processesOfRun(runTag);
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Engines left by a run that was killed before its teardown (owner keeper-test-r<pid>, that pid gone). */
function reapEnginesOfDeadRuns(): void {
  for (const owner of engineOwners()) {
    const pid = /^keeper-test-r(\d+)$/.exec(owner)?.[1];
    if (pid && !isAlive(Number(pid))) stopEnginesOf(owner);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The Java test server knows only its own Custom* attributes; a child workflow started with KeeperHost or
 * ServiceId would wait for ever for its start to be acknowledged. Register keeper's as the dev server does.
 */
async function registerSearchAttributes(address: string): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const keyword = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
    await connection.operatorService.addSearchAttributes({
      namespace: 'default',
      searchAttributes: { KeeperHost: keyword, ServiceId: keyword },
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
  log() {}, trace() {}, debug() {}, info() {}, warn() {},
  error: (m: string) => console.error(m),
};
