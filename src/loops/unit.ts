/**
 * A loop as one registered unit: what keeper needs to know of a control loop, declared in one place (a file per
 * loop in src/loops/) and listed once (src/loops/registry.ts). The worker's activities, the schedules, the looks and
 * the run requests, uninstall, `keeper status`, `keeper schedules`, the README's settings table and bench:cost all
 * read the registry; none of them names a loop.
 *
 * A unit has a backstop schedule (the workflow type it starts, its interval setting and first delay), or says how
 * a run of it is requested; its local look is optional. What it cannot hold: its workflow code, which lives in
 * src/workflows/ (the bundle takes only deterministic code), and its activities' and host operations' code, which
 * live in src/activities/ and src/host/<loop>/ (the unit wires them).
 */
import type { Client } from '@temporalio/client';
import type { RecordRun, ResultMetrics } from '../activities/loop-results';
import type { StateDb } from '../db/open';
import type { HostDeps } from '../host/deps';
import type { KeeperMetrics } from '../metrics';
import type { Settings } from '../settings';
import { requestRun } from '../temporal/operations';
import type { WorkflowType } from '../temporal/schedules';
import type { EngineView } from '../watch/engine-view';
import type { Finding } from '../watch/finding';

/** A setting whose value is a number of milliseconds (an interval, a delay). */
export type DurationSetting = {
  [K in keyof Settings]: K extends `${string}Ms` ? (Settings[K] extends number ? K : never) : never;
}[keyof Settings];

/** Requests one run of the loop now, saying why (and for which service); false: declined (an operator paused it). */
export type RequestRun = (client: Client, hostId: string, why: string, serviceId?: string) => Promise<boolean>;

/** A loop's backstop schedule: the workflow type it starts, how often, and how long after a worker's start the first. */
export interface BackstopSchedule {
  workflowType: WorkflowType;
  every: DurationSetting;
  firstDelay?: DurationSetting;
}

/** A loop's local look: how often, how long after a worker's start the first, and what a run would do now. */
export interface LookSpec {
  every: DurationSetting;
  firstDelay?: DurationSetting;
  find(deps: HostDeps, view: EngineView): Promise<Finding>;
}

/** A unit's declaration; `R` is its run's result, as it records it. */
interface LoopDeclaration<N extends string, A extends object, R extends object> {
  /** Its schedule `keeper-<host>-<name>`, `keeper schedules <name>`, the `loop` of logs, metrics and keeper_loop_results. */
  name: N;
  /** Its runs' workflow types besides its schedule's, by what starts them (`events`: the watcher's and the looks' requests). */
  otherRuns?: Readonly<Record<string, WorkflowType>>;
  /** Every activity its workflows call, for one host; `record` keeps a run's result (and applies `metrics`). */
  activities(deps: HostDeps, record: RecordRun): A;
  look?: LookSpec;
  /** A run is requested as the worker starts (best effort), besides those its look and its schedule request. */
  runAtStart?: boolean;
  /** The keys of SETTINGS that are its own (the README's settings table groups them under it). */
  settings: readonly (keyof Settings)[];
  /** What its recorded result adds to the metrics. */
  metrics?(metrics: KeeperMetrics, db: StateDb, result: Partial<R>): void;
  /** Its result in an operator's words: `keeper status`'s last runs. A result recorded by an older keeper may lack fields. */
  words(result: Partial<R>): string;
}

/** Scheduled (a request goes to its schedule, unless it says otherwise), or requested its own way. */
type Requested = { schedule: BackstopSchedule; request?: RequestRun } | { schedule?: undefined; request: RequestRun };

export type LoopDefinition<N extends string, A extends object, R extends object> = LoopDeclaration<N, A, R> & Requested;

/** A registered unit: its declaration, with results read back from the state DB as they come (unknown). */
export type LoopUnit<N extends string = string, A extends object = object> = Omit<LoopDeclaration<N, A, object>, 'metrics' | 'words'> & {
  schedule?: BackstopSchedule;
  /** How a run is requested (its schedule's trigger unless it said otherwise). */
  request: RequestRun;
  metrics?: ResultMetrics;
  /** Its result in words; a result that is no object (none is recorded so) is shown as it is. */
  words(result: unknown): string;
};

/** A loop's unit from its declaration: its types checked here, its results read back in one place. */
export function loopUnit<N extends string, A extends object, R extends object>(def: LoopDefinition<N, A, R>): LoopUnit<N, A> {
  const asResult = (result: unknown) => (result ?? {}) as Partial<R>;
  return {
    ...def,
    request: def.request ?? ((client, hostId) => requestRun(client, hostId, def.name, { unlessPaused: true })),
    metrics: def.metrics && ((metrics, db, result) => def.metrics!(metrics, db, asResult(result))),
    words: (result) => (typeof result === 'object' && result !== null ? def.words(asResult(result)) : JSON.stringify(result)),
  };
}
