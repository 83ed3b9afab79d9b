/**
 * What crosses the reconcile tick's workflow–activity boundary: what the observe step saw, what the apply and
 * housekeeping steps did, and the tick's summary that `keeper status` reads back. Types only: workflow code,
 * activities, host operations, the DB layer and the pure rules all import them, so they import nothing.
 * Times are unix seconds unless a name says ms.
 */

/**
 * keeper's snapshot of a service's container: what it last saw of it. Fields of the types below that hold snapshots
 * keep their names from before the word (`expectedLook`, `nextLook`, `looks`): they cross the workflow–activity
 * boundary, and a run in flight sends them as it recorded them.
 */
export interface ContainerSnapshot {
  containerId: string;
  state: string; // running | restarting | exited | dead | created | paused | missing
  restartCount: number;
  health: string;
}

/**
 * How a death was told (src/policy/deaths/facts.ts): the inspect of a container down now (`look`, as
 * keeper_crash_records stores it), an event, RestartCount alone, a health check, a vanished container.
 */
export type SeenBy = 'event' | 'look' | 'restart-count' | 'health-check' | 'missing';

export interface LogWindow {
  sinceMs: number;
  untilMs: number;
}

export interface DeathFacts {
  seenBy: SeenBy;
  diedAtMs: number | null;
  exitCode: number | null;
  oomKilled: boolean | null;
  engineError: string;
  /** Where the dead run's output lies; null when the time of death is unknown. */
  logWindow: LogWindow | null;
}

/** A death the tick counts: its facts, and whether the engine had stopped it (counted after the grace). */
export interface CountedDeath extends DeathFacts {
  engineStopped?: boolean;
  /** Its exit code is one the service expects (keeper.expected-exit-codes): recorded, not counted. */
  expected?: boolean;
  /** How diedAtMs was found (policy/deaths/dating.ts); absent from observations made before dating. */
  datedBy?: DatedBy;
}

/**
 * How a death's time was found: seen within a minute (live), the engine's replayed die event, the container's run
 * times (State.FinishedAt), or spread over the interval keeper did not see when nothing of it survived.
 */
export type DatedBy = 'live' | 'event' | 'run-times' | 'spread';

/** The crash rules of a host (its settings) or of one service (its labels). */
export interface CrashPolicy {
  windowSec: number;
  threshold: number;
  /** Retry delay by opening: the 1st, the 2nd, ... the last applies to every later opening. */
  backoffSec: number[];
  decaySec: number;
}

/** A service's own crash policy, read from its labels (src/policy/service-crash-policy.ts). */
export interface ServiceCrashRules {
  policy: CrashPolicy;
  /** Exit codes that are this service's normal end: recorded, marked expected, not counted. */
  expectedExitCodes: number[];
}

/** One observed crash: the snapshot it replaces, the snapshot that proves it, and how many deaths lie between. */
export interface CrashRecord {
  serviceId: string;
  containerId: string;
  /** The snapshot it replaces (null: keeper had none). */
  expectedLook: ContainerSnapshot | null;
  /** The snapshot that proves it. */
  nextLook: ContainerSnapshot;
  deaths: number;
  reason: string;
  /** `running` when Docker already brought the container back up long enough ago. */
  statusAfter: 'crashed' | 'running';
  /** Each death's facts, oldest first; absent from observations made before crash forensics. */
  facts?: CountedDeath[];
  /** The service's own crash policy (its labels); absent: the host's, and no exit is expected. */
  rules?: ServiceCrashRules;
}

/**
 * One opening of a service's circuit: the tick hands it to the circuit's workflow. Refs in histories recorded before
 * openings were numbered carry `generation` (the escalation, by its old name) and no opening: the workflow code
 * reads neither from them.
 */
export interface CircuitRef {
  serviceId: string;
  /**
   * The opening's number (keeper_circuit_openings): 1, 2, 3 ... per service, never repeated. Absent from the look's
   * refs of an opening keeper has not numbered yet (the tick's hand-over numbers it), and from older histories.
   */
  opening?: number;
  /** circuit_open_count: the escalation level, which picked the backoff (and decays). */
  escalation: number;
  retryAt: number;
  /** Why this tick opened it (src/policy/circuit-words.ts); absent for a circuit it only hands to its workflow. */
  why?: string;
  /**
   * Whether a circuit workflow holds this opening already (keeper_circuit_holds), as the tick's hand-over found it:
   * a start that finds a run of the circuit's id asks it to look again only when not (it holds an older opening).
   */
  held?: boolean;
}

export interface Problem {
  subject: string; // e.g. service:<id>, container:<id12>
  problem: string;
}

export interface SplitBrain {
  containerId: string;
  serviceId: string;
  dbContainerId: string;
}

/** What one reconcile tick saw: the observe step's result, which the apply step acts on. */
export interface TickObservation {
  /** Unix seconds of the observation. */
  now: number;
  dockerError?: string; // set when the engine did not answer the lists: no Docker step runs
  checked: number;
  inspected: number;
  transientErrors: number;
  transientSamples: string[]; // the first few, for the log
  crashes: (CrashRecord & { restart: boolean })[];
  /** Snapshots that changed with nothing to count (a health check that passed, a first snapshot): swapped as they are. */
  looks: { serviceId: string; expected: ContainerSnapshot | null; next: ContainerSnapshot }[];
  unchanged: number; // containers confirmed unchanged since keeper's last snapshot
  /** Deaths the engine itself caused (its own stop), held while it may start the containers again. */
  engineStopsHeld?: number;
  /**
   * Containers whose deaths were held, not decided: the decision needed the engine's events and the tick's read of
   * them failed (crash-evidence.ts). Their snapshots stay, so a later tick decides them. Absent when none.
   */
  deathsHeld?: number;
  backUp: { serviceId: string; containerId: string }[];
  gone: { serviceId: string; containerId: string }[];
  /** In-flight rows (created, restarting) whose container is gone (404): their outcome (policy/rows.ts). Absent from observations made before it. */
  vanished?: { serviceId: string; containerId: string; fromStatus: string; status: 'stopped'; reason: string }[];
  databases: { id: string; from: string; to: string }[];
  environmentsDown: { id: string; reason: string }[];
  environmentStops: { id: string; containerId: string }[];
  /**
   * Services whose circuit is open while their container runs: the stop at the opening failed, or someone started
   * it. The tick stops it again, every tick until it is down. Absent from observations made before it.
   */
  openCircuitsRunning?: { serviceId: string; containerId: string }[];
  splitBrain: SplitBrain[];
  problems: Problem[];
  /** Recorded deaths (keeper_crash_records ids) that the engine's later `oom` events show were OOM kills. */
  oomConfirmed?: number[];
  /** Services whose crash policy labels this tick read (from the list or an inspect), and the bad ones' lines. */
  labelsChecked?: string[];
  labelProblems?: { serviceId: string; problems: string[] }[];
}

/** What the apply step did with an observation. */
export interface TickApplied {
  crashes: number; // deaths counted
  crashedServices: number;
  opened: CircuitRef[];
  unhealthyRestarted: number;
  recovered: number; // crashed services whose container runs again
  missing: number; // crashed, created or restarting services whose container is gone → stopped
  databasesUnavailable: number;
  databasesReady: number;
  environmentsStopped: number;
  containersStopped: number;
  dockerActionErrors: number;
  /** Recorded deaths corrected to OOM kills; absent from results made before it. */
  oomConfirmed?: number;
}

/** What the tick's DB-only steps did. */
export interface Housekeeping {
  /** This worker's host: the tick names circuit workflows with it (recorded, so replay sees the same). */
  hostId: string;
  failedDeploys: number;
  failedEnvCreates: number;
  expiredLeases: number;
  decayed: number;
  expiredCircuits: CircuitRef[];
}

/** A tick's result: what it saw, counted, opened and recovered, compact whatever the number of services. */
export interface TickSummary extends Omit<TickApplied, 'opened'>, Omit<Housekeeping, 'expiredCircuits' | 'hostId'> {
  dockerReachable: boolean;
  checked: number;
  inspected: number;
  transientErrors: number;
  /** Deaths the engine itself caused (dockerd stopping), held, not counted, while it may start them again. */
  engineStopsHeld: number;
  /** Containers whose deaths waited for the engine's events (unreadable this tick); absent when none. */
  deathsHeld?: number;
  opened: number;
  circuitsExpired: number;
  splitBrain: SplitBrain[];
  badInput: Problem[];
}

/** One whole tick run as a local activity: only this compact result enters the workflow's history. */
export interface ReconciledHost {
  hostId: string;
  /** Circuits the workflow starts (opened, or due for a retry). */
  circuits: CircuitRef[];
  summary: TickSummary;
  /** Services this tick counted a crash for or started a circuit of, for the run's search attributes. */
  services: string[];
  /** The run's one line when it acted (`ok: 20 services, 1 crash, …`); absent when it changed nothing. */
  details?: string;
}
