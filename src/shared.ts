/**
 * Names and message definitions shared by workflows, the worker, the CLI and tests. Workflow code imports
 * this module, so it must stay deterministic: no Node built-ins, nothing but @temporalio/common and
 * @temporalio/workflow definitions.
 */
import { defineSearchAttributeKey } from '@temporalio/common';
import { defineQuery, defineSignal } from '@temporalio/workflow';

/** Every workflow and activity of one host runs on its own queue, so activities touch only that host. */
export function taskQueueFor(hostId: string): string {
  return `keeper-${hostId}`;
}

export type LoopName = 'reconcile' | 'gc' | 'pool';
export const LOOPS: LoopName[] = ['reconcile', 'gc', 'pool'];

export const ids = {
  schedule: (hostId: string, loop: LoopName) => `keeper-${hostId}-${loop}`,
  circuit: (hostId: string, serviceId: string) => `keeper-${hostId}-circuit-${serviceId}`,
  health: (hostId: string) => `keeper-${hostId}-health`,
};

/** Search attributes that let the UI filter runs by host and by service. */
export const KeeperHost = defineSearchAttributeKey('KeeperHost', 'KEYWORD');
export const ServiceId = defineSearchAttributeKey('ServiceId', 'KEYWORD');

// ---- circuit breaker messages ----

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
}

export interface CircuitInput {
  serviceId: string;
}

/** Operator reset: close the circuit now. The optional argument is a free-text reason for the history. */
export const circuitResetSignal = defineSignal<[reason?: string]>('reset');
export const circuitStateQuery = defineQuery<CircuitState>('state');
