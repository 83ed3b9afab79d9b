/** Connects tests to the servers that global-setup started, and runs keeper workers against them. */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, makeTelemetryFilterString, Runtime, type Worker } from '@temporalio/worker';
import { inject } from 'vitest';
import type { ActivityDeps } from '../../src/activities';
import { createKeeperWorker } from '../../src/worker';

let runtimeInstalled = false;
function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    // The Java test server lacks a capability core warns about on every worker start; errors still show.
    Runtime.install({
      logger: new DefaultLogger('ERROR'),
      telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR' }), forward: {} } },
      shutdownSignals: [],
    });
  } catch {
    // already installed by another helper in this process
  }
}

/** The shared Java time-skipping server: timers jump forward while a test awaits a workflow result. */
export async function timeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  quietRuntime();
  // `create` is the factory behind createTimeSkipping; it accepts an already running server.
  return (TestWorkflowEnvironment as unknown as { create(o: object): Promise<TestWorkflowEnvironment> }).create({
    server: { type: 'existing' },
    address: inject('timeSkippingAddress'),
    namespace: 'default',
    supportsTimeSkipping: true,
  });
}

/** The shared CLI dev server: real schedules, visibility and search attributes. */
export async function devServerEnv(): Promise<TestWorkflowEnvironment> {
  quietRuntime();
  return TestWorkflowEnvironment.createFromExistingServer({ address: inject('devServerAddress') });
}

/** A keeper worker for `deps.settings.hostId`, built from the bundle global-setup made once. */
export async function keeperWorker(env: TestWorkflowEnvironment, deps: ActivityDeps): Promise<Worker> {
  return createKeeperWorker({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    deps,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    shutdownGraceTime: '2s',
  });
}
