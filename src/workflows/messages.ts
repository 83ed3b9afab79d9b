/**
 * The circuit breaker's and the reconcile tick's messages, shared by the workflow, the CLI and tests (the client and the workflow use the
 * same definitions). Workflow code imports this module: it stays deterministic.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { CircuitState } from '../contracts/circuit';

/** Operator reset: close the circuit now. The optional argument is a free-text reason for the history. */
export const circuitResetSignal = defineSignal<[reason?: string]>('reset');
export const circuitStateQuery = defineQuery<CircuitState>('state');
/**
 * The tick's request to a circuit's run that it found holding the circuit's workflow id while a newer opening (the
 * argument) is open with no workflow holding it: a run of an older opening continues as new to hold this one.
 */
export const circuitRecheckSignal = defineSignal<[opening: number]>('recheck');

/** The event watcher's request for one more reconcile pass (signal-with-start of the host's reconcileOnEvents run). */
export const moreEventsSignal = defineSignal('moreEvents');
