/**
 * The circuit breaker's and the reconcile tick's messages, shared by the workflow, the CLI and tests (the client and the workflow use the
 * same definitions). Workflow code imports this module: it stays deterministic.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { DeathSummary } from '../policy/notification';

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

export interface CircuitInput {
  serviceId: string;
}

/** Operator reset: close the circuit now. The optional argument is a free-text reason for the history. */
export const circuitResetSignal = defineSignal<[reason?: string]>('reset');
export const circuitStateQuery = defineQuery<CircuitState>('state');

/** The event watcher's request for one more reconcile pass (signal-with-start of the host's event tick). */
export const moreEventsSignal = defineSignal('moreEvents');
