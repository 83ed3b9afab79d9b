/**
 * What `keeper uninstall` does with what is still in flight, decided before anything is touched. Pure.
 *
 * - Open circuits whose circuitBreaker workflow runs: `close` resets them now (services recover at once),
 *   `hand-over` terminates their workflows and leaves the DB rows open, so circuit_retry_at keeps the time for
 *   whatever runs next (ah's reconciler, or a keeper under another host id, recovers an expired circuit from its
 *   row), `leave` leaves the workflows running: they need a worker polling this host's task queue.
 * - Pending alerts (notifyOperators workflows): `drop` terminates them (their receivers never get them), `leave`
 *   leaves them running: they too need a worker on this host's queue.
 * With something in flight and no choice given, nothing is touched.
 */
export const CIRCUIT_CHOICES = ['close', 'hand-over', 'leave'] as const;
export const ALERT_CHOICES = ['drop', 'leave'] as const;
export type CircuitChoice = (typeof CIRCUIT_CHOICES)[number];
export type AlertChoice = (typeof ALERT_CHOICES)[number];

/** What each of a host's workflow types is to uninstall (src/cli/uninstall.ts takes them from the loop list). */
export interface HostWorkflowTypes {
  /** One open circuit's timer. */
  circuit: string;
  /** One pending alert. */
  alert: string;
  /** Runs whose steps are idempotent, stopped by uninstall: every loop's runs, and a health check. */
  stoppable: readonly string[];
}

export interface OpenCircuit {
  serviceId: string;
  /** circuit_open_count: its escalation level. */
  escalation: number;
  retryAt: number | null; // unix seconds
}

export interface InFlight {
  /** Open circuits in the state DB, with their workflow's id when it runs. */
  circuits: (OpenCircuit & { workflowId: string | null })[];
  /** circuitBreaker workflows running with no open row (closing, or their row was changed by hand). */
  strayCircuitWorkflows: string[];
  alerts: string[];
  loopRuns: string[];
}

export interface Running {
  workflowId: string;
  type: string;
}

/** Sorts the host's running workflows and the DB's open circuits into what is in flight. */
export function inFlight(
  running: Running[],
  openCircuits: OpenCircuit[],
  circuitWorkflowId: (serviceId: string) => string,
  types: HostWorkflowTypes,
): InFlight {
  const byId = new Set(running.filter((w) => w.type === types.circuit).map((w) => w.workflowId));
  const circuits = openCircuits.map((c) => ({
    ...c,
    workflowId: byId.has(circuitWorkflowId(c.serviceId)) ? circuitWorkflowId(c.serviceId) : null,
  }));
  const matched = new Set(circuits.map((c) => c.workflowId));
  return {
    circuits,
    strayCircuitWorkflows: [...byId].filter((id) => !matched.has(id)),
    alerts: running.filter((w) => w.type === types.alert).map((w) => w.workflowId),
    loopRuns: running.filter((w) => types.stoppable.includes(w.type)).map((w) => w.workflowId),
  };
}

export interface Choices {
  circuits?: CircuitChoice;
  alerts?: AlertChoice;
}

/** Why uninstall must not proceed without a choice, or undefined when it may. */
export function missingChoice(f: InFlight, c: Choices): string | undefined {
  const circuits = f.circuits.filter((x) => x.workflowId).length + f.strayCircuitWorkflows.length;
  const missing: string[] = [];
  if (circuits > 0 && !c.circuits)
    missing.push(`${circuits} circuit workflow${circuits === 1 ? '' : 's'} running: choose --circuits ${CIRCUIT_CHOICES.join('|')}`);
  if (f.alerts.length > 0 && !c.alerts)
    missing.push(`${f.alerts.length} alert${f.alerts.length === 1 ? '' : 's'} pending: choose --alerts ${ALERT_CHOICES.join('|')}`);
  return missing.length > 0 ? `nothing removed: ${missing.join('; ')}` : undefined;
}
