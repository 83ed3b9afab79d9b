/**
 * Global setup of `npm run test:fast`: only the workflow bundle and the Java time-skipping server, the two made
 * side by side. No Docker engine, no dev server, no host-safety check: the fast suite starts nothing else, and
 * its tests touch no engine (test/host/ uses an in-memory one) and only SQLite files of their own. Provides the keys the fast tests inject.
 */
import type { TestProject } from 'vitest/node';
import { startTimeSkippingServer, writeWorkflowBundle, type TimeSkippingServer } from './helpers/test-server';

let testServer: TimeSkippingServer | undefined;

export async function setup(project: TestProject): Promise<void> {
  // The JVM starts while webpack bundles; a failed bundle does not leave the server running.
  const starting = startTimeSkippingServer();
  let bundlePath: string;
  try {
    bundlePath = await writeWorkflowBundle();
  } catch (err) {
    (await starting.catch(() => undefined))?.stop();
    throw err;
  }
  testServer = await starting;
  project.provide('workflowBundlePath', bundlePath);
  project.provide('timeSkippingAddress', testServer.address);
}

export async function teardown(): Promise<void> {
  testServer?.stop();
}
