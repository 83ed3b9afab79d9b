/**
 * The circuit breaker's messages, shared by the workflow, the CLI and tests (the client and the workflow use the
 * same definitions). Workflow code imports this module: it stays deterministic.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { CircuitState } from '../contracts/circuit';

/** Operator reset: close the circuit now. The optional argument is a free-text reason for the history. */
export const circuitResetSignal = defineSignal<[reason?: string]>('reset');
export const circuitStateQuery = defineQuery<CircuitState>('state');
