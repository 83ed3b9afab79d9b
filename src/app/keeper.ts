/**
 * The Keeper: keeper's one composition root. Built from settings and a mode, it owns everything a keeper process
 * opens (the logger, the engine client, the state DB, the Temporal connections and client, the worker, the
 * watchers and the local looks), opens each only when first asked for, in the one safe order, and closes them in
 * reverse. The modes decide what it may do to the state DB (src/app/open.ts): `worker` alone creates one,
 * `command` changes things on an existing one, `status` only reads. `keeper worker`, the one-shot commands, the
 * other CLI commands and the demo all start here; tests and benchmarks inject what they own (a logger that
 * captures lines, a clock, an engine behind a fault proxy, a DB they opened) and take the rest.
 */
import type { Client } from '@temporalio/client';
import type { Workflow, WorkflowResultType } from '@temporalio/common';
import { Runtime } from '@temporalio/worker';
import type { StateDb } from '../db/open';
import type { Engine } from '../docker/engine';
import type { HostDeps } from '../host/deps';
import type { Logger } from '../log';
import { createKeeperMetrics, type KeeperMetrics } from '../metrics';
import type { Settings } from '../settings';
import { installRuntime } from '../temporal/runtime';
import { createKeeperHost, type KeeperHost } from './keeper-host';
import { hostEngine, hostLogger, openHost, openHostDb, type HostMode, type HostParts } from './open';
import { withOperatorClient } from './operator-client';
import { runOneShotWorkflow, runOnHost, type OneShot } from './run-once';
import { runHostWorker, type StartedWorker } from './worker-run';
import { oneLine } from '../text';

export type { OneShot } from './run-once';
export type { StartedWorker } from './worker-run';
// What the CLI needs besides the Keeper: the state DB's errors, the whole-file copies of backup and restore, and
// where a command's Temporal is.
export { checkBackup, copySqliteOnline, refuseLiveDb, StateDbError, StateDbMissingError, type CopyResult } from './open';
export { operatorTarget } from './operator-client';

type Closer = () => Promise<unknown> | unknown;

export class Keeper {
  private readonly closers: { what: string; close: Closer }[] = [];
  private made: { log?: Logger; engine?: Engine; db?: StateDb; metrics?: KeeperMetrics | null; deps?: HostDeps; host?: KeeperHost } = {};
  private current: Settings;

  constructor(
    settings: Settings,
    readonly mode: HostMode,
    private readonly parts: HostParts = {},
  ) {
    this.current = settings;
  }

  /** The settings in force: as given, with what the host itself decides (the worker's tenant runtime). */
  get settings(): Settings {
    return this.current;
  }

  /** Before anything is made from them: the worker's tenant runtime is known only once the engine has been asked. */
  useSettings(settings: Settings): void {
    if (this.made.deps) throw new Error('keeper: settings changed after the host was opened');
    this.current = settings;
  }

  get log(): Logger {
    return (this.made.log ??= this.parts.log ?? hostLogger(this.current, { inWorker: this.mode === 'worker' }));
  }

  get engine(): Engine {
    return (this.made.engine ??= this.parts.docker ?? hostEngine(this.current, this.mode));
  }

  /** The state DB, opened as the mode allows (only a worker creates one); closed by `close` unless it was given. */
  get db(): StateDb {
    if (this.made.db) return this.made.db;
    const db = this.parts.db ?? openHostDb(this.current, this.mode);
    if (!this.parts.db) this.onClose('the state DB', () => db.close());
    return (this.made.db = db);
  }

  /**
   * The SDK's runtime, installed once per process: a worker's logs through keeper's logger and serves the metrics
   * endpoint (--metrics-port); a command's stays quiet. Before any Temporal connection.
   */
  installRuntime(): void {
    if (this.mode === 'worker') installRuntime(this.log, { metricsPort: this.current.metricsPort, hostId: this.current.hostId });
    else installRuntime(undefined);
  }

  /** keeper's metrics, on the SDK runtime's meter: a worker's, when --metrics-port serves them; none otherwise. */
  get metrics(): KeeperMetrics | undefined {
    if (this.made.metrics === undefined) {
      const served = this.mode === 'worker' && this.current.metricsPort > 0;
      this.made.metrics = this.parts.metrics ?? (served ? createKeeperMetrics(Runtime.instance().metricMeter) : null);
    }
    return this.made.metrics ?? undefined;
  }

  /** The host's dependencies, from the parts above (a command's settings take the worker's recorded runtime). */
  get deps(): HostDeps {
    if (this.made.deps) return this.made.deps;
    const parts = { ...this.parts, log: this.log, docker: this.engine, db: this.db, metrics: this.metrics };
    return (this.made.deps = openHost(this.current, this.mode, parts).deps);
  }

  /** The host as a Temporal worker sees it: its worker, schedules, watchers, looks and run requests. */
  get host(): KeeperHost {
    return (this.made.host ??= createKeeperHost(this.deps.settings, { ...this.parts, ...this.deps }));
  }

  /** Runs `fn` with a client of the configured Temporal, else `npm start`'s on this machine (a command's). */
  withOperatorClient<T>(fn: (client: Client) => Promise<T>, connectTimeoutMs?: number): Promise<T> {
    return withOperatorClient(this.current, fn, connectTimeoutMs);
  }

  /**
   * A one-shot command's work on this host's Temporal, never waiting on a task queue no worker polls: through the
   * host's worker when one polls, else a worker of the command's own, on an in-memory server if none runs here
   * (src/app/run-once.ts). What it opens is closed with the Keeper.
   */
  runOnHost<T>(fn: (client: Client) => Promise<T>): Promise<OneShot<T>> {
    return runOnHost(this, fn);
  }

  /** One run of `workflow` as this host's one-shot `workflowId` (see runOnHost). */
  runWorkflowOnce<W extends Workflow>(workflow: W, workflowId: string, args: Parameters<W>): Promise<OneShot<WorkflowResultType<W>>> {
    return runOneShotWorkflow(this, workflow, workflowId, args);
  }

  /** `keeper worker`: this host's worker until SIGINT or SIGTERM (src/app/worker-run.ts); `onStarted` once it runs. */
  runWorker(onStarted: (started: StartedWorker) => Promise<void> | void): Promise<void> {
    return runHostWorker(this, onStarted);
  }

  /** Registers what `close` undoes, newest first. */
  onClose(what: string, close: Closer): void {
    this.closers.push({ what, close });
  }

  /** Closes what was opened, in reverse; a step that fails is logged and the rest still run. */
  async close(): Promise<void> {
    while (this.closers.length > 0) {
      const step = this.closers.pop()!;
      try {
        await step.close();
      } catch (err) {
        this.made.log?.warn(`could not close ${step.what}`, { error: oneLine(err) });
      }
    }
  }

  /** A keeper for `fn`, closed after it, whatever it does. */
  static async with<T>(settings: Settings, mode: HostMode, fn: (keeper: Keeper) => Promise<T> | T, parts?: HostParts): Promise<T> {
    const keeper = new Keeper(settings, mode, parts);
    try {
      return await fn(keeper);
    } finally {
      await keeper.close();
    }
  }
}
