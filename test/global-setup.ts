/**
 * Starts what the whole suite shares, once: the workflow bundle, a Temporal CLI dev server and the Java
 * time-skipping test server (bundle and test server as `npm run test:fast` starts them: helpers/test-server.ts).
 *
 * It also guards the host: setup records the host's state and tags this run's processes; teardown stops
 * everything the run started (servers, extra engines), then fails the run if the host's interfaces, routes,
 * iptables, the main engine's networks, containers or volumes changed, if a file left a container, volume or
 * network on its lane's engine (test/helpers/lanes.ts), or if a process of the run survives.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startDevServer, type DevServer } from '../src/temporal/dev-server';
import { engineOwner, engineOwners, stopEnginesOf } from './helpers/engines';
import { captureHostState, diffHostState, processesOfRun, RUN_TAG_VARIABLE, type HostState } from './helpers/host-state';
import { laneLeftovers } from './helpers/lanes';
import { newcomerDir } from './e2e/newcomer';
import { startTimeSkippingServer, writeWorkflowBundle, type TimeSkippingServer } from './helpers/test-server';

declare module 'vitest' {
  export interface ProvidedContext {
    workflowBundlePath: string;
    devServerAddress: string;
    timeSkippingAddress: string;
    /** The lock a file holds while it uses the shared time-skipping server (timeSkippingEnv); unset in test:fast. */
    timeSkippingLock: string | undefined;
    /** This run's tag: in the environment of every process it starts, and in the names of its extra engines. */
    runTag: string;
  }
}

let devServer: DevServer | undefined;
let testServer: TimeSkippingServer | undefined;
let hostBefore: HostState | undefined;
const runTag = `r${process.pid}`;
const timeSkippingLock = path.join(os.tmpdir(), `keeper-test-${runTag}-time-skipping`);

export async function setup(project: TestProject): Promise<void> {
  reapEnginesOfDeadRuns();
  hostBefore = await captureHostState();
  process.env[RUN_TAG_VARIABLE] = runTag;
  project.provide('runTag', runTag);
  project.provide('workflowBundlePath', await writeWorkflowBundle());

  devServer = await startDevServer();
  project.provide('devServerAddress', devServer.address);

  testServer = await startTimeSkippingServer();
  project.provide('timeSkippingAddress', testServer.address);
  project.provide('timeSkippingLock', timeSkippingLock);
}

export async function teardown(): Promise<void> {
  testServer?.stop();
  fs.rmSync(`${timeSkippingLock}.lock`, { recursive: true, force: true });
  fs.rmSync(newcomerDir(runTag), { recursive: true, force: true }); // when front-door.test.ts did not run to take it
  await devServer?.stop();
  const leftOnLanes = await laneLeftovers(runTag);
  stopEnginesOf(engineOwner(runTag));
  const survivors = await settledProcesses();
  if (!hostBefore) return;
  const changes = diffHostState(hostBefore, await captureHostState());
  const problems = [...changes, ...leftOnLanes, ...survivors.map((p) => `processes: still running ${p.pid} ${p.args.slice(0, 160)}`)];
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
