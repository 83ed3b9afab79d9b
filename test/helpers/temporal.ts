/** Connects tests to the servers that global-setup started, and runs keeper workers against them. */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, makeTelemetryFilterString, Runtime, type Worker } from '@temporalio/worker';
import { afterAll, beforeAll, inject } from 'vitest';
import type { HostParts } from '../../src/app/open';
import { createKeeperHost } from '../../src/app/keeper-host';
import type { Settings } from '../../src/settings';
import type { EngineFixture } from './fixtures';
import { takeLock } from './locks';
import { startTimeSkippingServer, type TimeSkippingServer } from './test-server';

let runtimeInstalled = false;
export function quietRuntime(): void {
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

/**
 * The shared Java time-skipping server (or the one at `address`): timers jump forward while a test awaits a
 * workflow result. The shared server is one clock, so in `npm test`, where files run side by side, a file holds it
 * alone from connecting until its environment's teardown: another file's skipped hour would fire this one's timers.
 */
export async function timeSkippingEnv(address?: string): Promise<TestWorkflowEnvironment> {
  quietRuntime();
  const release = address === undefined ? await takeSharedClock() : undefined;
  // The one private SDK member keeper uses, and only here: `create`, the factory behind createTimeSkipping, which
  // alone connects a time-skipping environment to a server already running. The public API has no such way:
  // createTimeSkipping launches a server of its own and gives it 5 s, which the JVM misses on a busy machine
  // (docs/development.md), and createFromExistingServer's environment does not skip time.
  const env = await (TestWorkflowEnvironment as unknown as { create(o: object): Promise<TestWorkflowEnvironment> })
    .create({
      server: { type: 'existing' },
      address: address ?? inject('timeSkippingAddress'),
      namespace: 'default',
      supportsTimeSkipping: true,
    })
    .catch(async (err: unknown) => {
      await release?.();
      throw err;
    });
  if (release) {
    const teardown = env.teardown.bind(env);
    env.teardown = () => teardown().finally(release);
  }
  return env;
}

/** Waits (bounded) for the shared time-skipping server's lock, where global setup made one; resolves to its release. */
async function takeSharedClock(): Promise<(() => Promise<void>) | undefined> {
  const lockPath = inject('timeSkippingLock');
  if (!lockPath) return undefined; // `npm run test:fast`: one file at a time
  return takeLock(lockPath, SHARED_CLOCK_WAIT_MS, 'the shared time-skipping server');
}

const SHARED_CLOCK_WAIT_MS = 150_000;

/**
 * A time-skipping server of the calling file's own, for tests whose real activities can leave a workflow task
 * pending (a worker gone mid-run): on the test server such a task stops time skipping for every later test, so
 * these tests must not share the suite's server. Started in beforeAll, stopped in afterAll.
 */
export function ownTimeSkippingServerForFile(engine?: EngineFixture): TestWorkflowEnvironment {
  let server: TimeSkippingServer | undefined;
  afterAll(() => server?.stop());
  return envForFile(async () => {
    server = await startTimeSkippingServer();
    return timeSkippingEnv(server.address);
  }, engine);
}

/** The shared CLI dev server: real schedules, visibility and search attributes. */
export async function devServerEnv(): Promise<TestWorkflowEnvironment> {
  quietRuntime();
  return TestWorkflowEnvironment.createFromExistingServer({ address: inject('devServerAddress') });
}

/**
 * The shared dev server for every test of the calling file: connected in beforeAll, closed in afterAll after
 * `engine` (when given) removed what the tests made. The file's own afterAll hooks, registered later, run
 * before this one (vitest's default 'stack' order), so they still have the connection.
 */
export function devServerForFile(engine?: EngineFixture): TestWorkflowEnvironment {
  return envForFile(devServerEnv, engine);
}

/** The shared time-skipping server for every test of the calling file, connected and closed as devServerForFile's. */
export function timeSkippingForFile(): TestWorkflowEnvironment {
  return envForFile(timeSkippingEnv);
}

function envForFile(connect: () => Promise<TestWorkflowEnvironment>, engine?: EngineFixture): TestWorkflowEnvironment {
  let env: TestWorkflowEnvironment | undefined;
  beforeAll(async () => {
    env = await connect();
  });
  afterAll(async () => {
    await engine?.cleanup();
    await env?.teardown();
  });
  return forwardTo(() => {
    if (!env) throw new Error('the server is connected in beforeAll: use env inside a test or a hook');
    return env;
  });
}

/**
 * A stand-in that forwards every property to `target()`, read when used: tests keep `env.client` and
 * `keeperWorker(env, …)` as they were, although the environment is made only after the file has loaded.
 */
function forwardTo<T extends object>(target: () => T): T {
  return new Proxy({} as T, {
    get(_stub, key) {
      const real = target();
      const value = Reflect.get(real, key, real);
      return typeof value === 'function' ? value.bind(real) : value;
    },
  });
}

/** A keeper worker for `host.settings.hostId`, built by the composition root from the bundle global setup made once. */
export async function keeperWorker(env: TestWorkflowEnvironment, host: HostParts & { settings: Settings }): Promise<Worker> {
  return createKeeperHost(host.settings, host).createWorker({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    workflowBundle: { codePath: inject('workflowBundlePath') },
    shutdownGraceTime: '2s',
  });
}
