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
  generation: number;
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
}

export interface CircuitInput {
  serviceId: string;
}

export interface CircuitState {
  serviceId: string;
  /** circuit_open_count when the circuit opened: recovery applies only to this generation. */
  generation: number;
  /** Unix seconds at which the circuit closes by itself. */
  retryAt: number;
  phase: 'open' | 'recovering' | 'closed';
  /** timer or reset: this run closed it; superseded: it was already closed or reopened (a newer generation). */
  closedBy?: 'timer' | 'reset' | 'superseded';
  /** The service status recovery left: running (recovery=restart) or stopped. */
  status?: 'running' | 'stopped';
  /** The recorded deaths that opened it, oldest first (also in the workflow's memo). */
  deaths?: DeathSummary[];
}
