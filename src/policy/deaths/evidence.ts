/**
 * Step 1 of a death's story (index.ts): the evidence, what keeper has of a service's container when it looks. It
 * comes in two reads, both made by src/host/reconcile/ (this folder reads nothing itself):
 * - at the look (DeathEvidence): the inspect (the container's state, RestartCount, its current or last run, its
 *   health log) or a 404, keeper's stored view of the container (its last look), and, at keeper's first look at
 *   a container, what the service row and keeper's records counted before;
 * - then, for the containers whose look shows deaths, the engine's events since then (ContainerEventFact), one
 *   read for all of them. The engine keeps events in memory only (its last 256 of all kinds, none from before its
 *   own start), so the events of older deaths may be gone.
 * All times are unix milliseconds, unless a name says Sec.
 */
import type { ContainerSnapshot, ServiceCrashRules } from '../../contracts/reconcile';

/** An engine event about one container, as the tick reads them. */
export interface ContainerEventFact {
  action: 'die' | 'start' | 'kill' | 'oom';
  atMs: number;
  exitCode?: number;
  /** The signal a `kill` event sent, as the engine names it (a number, e.g. "15"). */
  signal?: string;
}

/** Restart policies under which Docker restarts a container after every exit of its process. */
export const RESTART_EVERY_EXIT = new Set(['always', 'unless-stopped']);
/** The engine's kill (the stop signal, or SIGKILL after the stop timeout) comes this close before the die. */
export const KILL_BEFORE_DIE_MS = 15_000;

/** What the inspect says of the container's current (or, when it is down, last) run. */
export interface RunState {
  status: string;
  exitCode: number;
  oomKilled: boolean;
  /** The engine's own error for the run (e.g. a failed restart); '' when none. */
  error: string;
  startedAtMs: number | null;
  finishedAtMs: number | null;
  restartPolicy: string;
  /** When the health check made it unhealthy (the engine's health log); null when healthy or unknown. */
  unhealthySinceMs: number | null;
}

/** What the service row and keeper's records say was counted before; unix seconds, null when never. */
export interface CountedBefore {
  status: string;
  lastCrashedAt: unknown;
  crashWindowStart: unknown;
  lastRecordedAt: number | null;
  /** When a keeper worker first started on this state DB; null when none has. */
  keeperArrivedAt: number | null;
}

/** keeper's last look at this same container, and when it looked (unix seconds). */
export interface PreviousSnapshot extends ContainerSnapshot {
  seenAt: number;
}

/** What the inspect shows of a container that is there. */
export interface Inspected {
  /** The engine's full id: events name containers by it. */
  fullId: string;
  createdAtSec: number;
  run: RunState;
}

/** What keeper has of a service's container when it looks: where a death's story starts. */
export interface DeathEvidence {
  serviceId: string;
  /** As the service row holds it (maybe a 12-character prefix). */
  containerId: string;
  /** The service row's status: `running` or `crashed`. */
  rowStatus: string;
  /** keeper's stored view of the service's container: the look this one replaces (of any container; null: none). */
  stored: ContainerSnapshot | null;
  /** keeper's last look at this same container; null at keeper's first look at it. */
  previous: PreviousSnapshot | null;
  /** The look now: the inspect's, or `missing` (a 404, RestartCount as last seen). */
  current: ContainerSnapshot;
  /** The inspect; null when the container is gone. */
  inspected: Inspected | null;
  /** How long its current run has been up (s); 0 when it is gone or never started. */
  upSec: number;
  /**
   * At keeper's first look at a container it inspected (previous is null): what was counted before, its baseline.
   * Null otherwise (read only then: a later look counts from the previous one).
   */
  countedBefore: CountedBefore | null;
  /** The service's own crash policy (its labels); absent: the host's. */
  rules?: ServiceCrashRules;
  /** The crash window its deaths are counted in (s): the service's, or the host's. */
  windowSec: number;
  /** When keeper looked (unix seconds). */
  nowSec: number;
  /**
   * When the engine last started (unix seconds): its default `bridge` network's creation, which dockerd makes anew at
   * each start. Read only for a later look at a container started since keeper's look before it (a dockerd restart
   * starts every container it brings back, with RestartCount back at 0); absent otherwise, null when the engine has
   * no default bridge (its start is then unknown).
   */
  engineStartedAtSec?: number | null;
}

/**
 * The kernel's OOM kill reaches the engine as its own `oom` event, apart from the exit: under load it comes after
 * the `die`, and after the inspect that still says OOMKilled false (exit 137). One this soon after a death (or a
 * little before it) is that death's.
 */
export const OOM_EVENT_AFTER_DEATH_MS = 30_000;
export const OOM_EVENT_BEFORE_DEATH_MS = 2_000;
