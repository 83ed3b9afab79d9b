/**
 * What crosses the circuit breaker's boundaries: what its activities hold and recover, and its input, state and
 * result as its callers (the tick, `keeper circuit reset`) see them. Types only.
 */

/** One counted death, as an alert carries it: enough to answer "why did it open", without log lines. */
export interface DeathSummary {
  /** Unix ms of the death; null when no fact of its time survived. */
  diedAtMs: number | null;
  reason: string;
  containerId: string;
}

export interface HeldCircuit {
  open: boolean;
  /** The opening held (keeper_circuit_openings): the one this run recovers. Absent when the circuit is not open. */
  opening?: number;
  /** circuit_open_count: the escalation level that picked the backoff. */
  escalation?: number;
  /**
   * The escalation under its old name: the only one in results recorded before openings were numbered, which the
   * runs that began then still read when they replay (compatibility; new results do not carry it).
   */
  generation?: number;
  retryAt: number; // unix seconds
  /** Milliseconds until retryAt on this host's clock, so the workflow's timer does not depend on the server's. */
  remainingMs: number;
  /** This host (child workflow ids name it), and whether it has webhooks to alert. */
  hostId?: string;
  alerts?: boolean;
  /** The recorded deaths of the window that opened it, oldest first: the circuit's "why" (memo, result, alert). */
  deaths?: DeathSummary[];
}

/** Who closes a circuit: its timer (auto_recovery) or an operator (manual_reset), as ah's deployment rows name it. */
export type RecoveryTrigger = 'auto_recovery' | 'manual_reset';

export interface RecoveryResult {
  recovered: boolean;
  status?: 'running' | 'stopped';
  /** Why recovery could not bring the service back (its kept container is gone). */
  error?: string;
  /** Not recovered because the circuit is open again, on a newer opening: its workflow continues as new to hold it. */
  reopened?: boolean;
}

export interface CircuitInput {
  serviceId: string;
  /** An operator's reset carried over by a run that continued as new to hold a newer opening: close that one now. */
  reset?: boolean;
}

export interface CircuitState {
  serviceId: string;
  /**
   * The opening this run holds: recovery closes only this one. Absent from runs that began before openings were
   * numbered (they recover by escalation, and only the opening their hold names).
   */
  opening?: number;
  /** circuit_open_count of that opening: the escalation level that picked its backoff. */
  escalation: number;
  /** Unix seconds at which the circuit closes by itself. */
  retryAt: number;
  phase: 'open' | 'recovering' | 'closed';
  /**
   * timer or reset: this run closed it; superseded: it was already closed, or open on a newer opening (which this
   * run's continuation, a run of the same workflow id, then holds).
   */
  closedBy?: 'timer' | 'reset' | 'superseded';
  /** The service status recovery left: running (recovery=restart) or stopped. */
  status?: 'running' | 'stopped';
  /** The recorded deaths that opened it, oldest first (also in the workflow's memo). */
  deaths?: DeathSummary[];
}
