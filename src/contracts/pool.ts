/**
 * What crosses the poolRefill workflow's boundary: each step's report, one pool entry's request and result, and
 * the refill's result that `keeper status` and `keeper pool status` read back. Types only.
 */
import type { DiskVerdict } from './disk';

export interface PruneReport {
  checked: number;
  /** Ready rows whose container the engine answered 404 for: row deleted, volume removed. */
  pruned: string[];
  /** Ready rows whose inspect failed otherwise: kept (W-P4). */
  kept: { id: string; error: string }[];
  /**
   * Ready rows whose container runs under another runtime than --tenant-runtime (made before the setting
   * changed, or by ah under its own): row deleted, container and volume removed; the plan makes new ones.
   * Absent from results recorded before keeper checked runtimes.
   */
  replaced?: { id: string; runtime: string }[];
  /**
   * Ready rows whose container is down (stopped outside keeper, or dead) for longer than an engine restart takes to
   * bring it back: row deleted, container and volume removed; the plan makes new ones. Absent from older results.
   */
  dead?: string[];
  /** Claimed rows an environment already owns (an interrupted claim's leftover row): row deleted. */
  finishedClaims: number;
  /** Claimed rows no environment references: left alone (they protect their container) and reported. */
  strandedClaims: string[];
}

export interface PoolDetachReport {
  /** Claimed containers taken off `ah-pool` (claims leave that to the refill when the network isolates). */
  detached: string[];
  failed: { containerId: string; error: string }[];
  /** Set when `ah-pool` could not be read (the engine did not answer): nothing was detached this time. */
  error?: string;
}

export type PullState = 'pulling' | 'pulled' | 'failed';

/** A template image's background pull, as a refill's plan and `keeper pool status` carry it. */
export interface PullView {
  state: PullState;
  /** Failed attempts in a row, the running one included; 0 once pulled. */
  attempts: number;
  startedAt: number; // unix seconds
  finishedAt: number | null;
  /** A failed pull is not started again before this (unix seconds). */
  nextTryAt: number | null;
  error: string;
  /** The latest progress in words, while pulling. */
  progress: string;
}

export interface MissingImage {
  templateId: string;
  name: string;
  image: string;
  /** Its background pull as recorded when the plan was made; absent when none was started (a plan without pulls). */
  pull?: PullView;
}

export interface RefillPlan {
  steps: { templateId: string; count: number }[];
  ready: Record<string, number>;
  pooled: string[];
  unknownTemplates: string[];
  /**
   * Pooled templates whose image this engine lacks: left out of the steps (their image is pulled in the
   * background, and the pull asks for a refill when it ends), and reported as the refill's conditions. Absent from
   * plans made before the plan checked images.
   */
  missingImages?: MissingImage[];
  /** Pooled templates whose image the engine did not answer about: planned as usual, their creates find out. */
  imagesUnchecked?: string[];
}

export interface PoolEntryRequest {
  entryId: string;
  templateId: string;
}

export interface PoolEntryResult {
  entryId: string;
  templateId: string;
  outcome: 'created' | 'exists' | 'full';
  containerId?: string;
}

export interface PoolRefillResult {
  /** Absent from results recorded before claims deferred the detach. */
  detach?: PoolDetachReport;
  prune: PruneReport;
  /** flaggedPaths is absent from results recorded before conditions were logged once. */
  disk: { level: DiskVerdict['level']; message: string; flaggedPaths?: string[] };
  blocked: boolean;
  plan: RefillPlan | null;
  created: PoolEntryResult[];
  failed: { entryId: string; templateId: string; error: string }[];
  ready: Record<string, number>;
  error?: string;
}
