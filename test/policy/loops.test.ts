/**
 * The loop list (src/ids.ts), which the schedules, uninstall, the metrics and bench:cost read instead of names by
 * hand: each loop's workflow types are workflows the bundle registers, every run type belongs to one loop, and
 * uninstall sorts a host's running workflows by it.
 */
import { describe, expect, it } from 'vitest';
import { LOOP_LIST, LOOPS, loopOfWorkflowType, loopRunTypes } from '../../src/ids';
import { inFlight, type HostWorkflowTypes } from '../../src/policy/uninstall';
import { LOOP_OTHER_RUNS, LOOP_WORKFLOWS } from '../../src/temporal/schedules';
import * as workflows from '../../src/workflows';

describe('the loop list', () => {
  it("names the loops, each schedule's workflow and the other runs, all registered workflows", () => {
    expect(LOOPS).toEqual(['reconcile', 'gc', 'pool']);
    for (const l of LOOP_LIST) {
      expect(LOOP_WORKFLOWS[l.name].name).toBe(l.workflowType);
      for (const type of loopRunTypes(l)) expect(Object.keys(workflows)).toContain(type);
    }
    expect(LOOP_OTHER_RUNS).toEqual({ events: 'reconcileOnEvents' });
  });

  it('gives each run type its loop, once, and no loop to the workflows that are none', () => {
    const all = LOOP_LIST.flatMap(loopRunTypes);
    expect(new Set(all).size).toBe(all.length);
    expect(all.map(loopOfWorkflowType)).toEqual(['reconcile', 'reconcile', 'gc', 'pool']);
    for (const other of ['circuitBreaker', 'notifyOperators', 'hostHealth', 'nonesuch']) expect(loopOfWorkflowType(other)).toBeUndefined();
  });

  it("sorts a host's running workflows for uninstall: loop runs (an event tick included), circuits, alerts", () => {
    const types: HostWorkflowTypes = {
      circuit: 'circuitBreaker',
      alert: 'notifyOperators',
      stoppable: [...LOOP_LIST.flatMap(loopRunTypes), 'hostHealth'],
    };
    const running = [
      { workflowId: 'keeper-h-reconcile-events', type: 'reconcileOnEvents' },
      { workflowId: 'keeper-h-gc-2026', type: 'gcSweep' },
      { workflowId: 'keeper-h-health', type: 'hostHealth' },
      { workflowId: 'keeper-h-circuit-s1', type: 'circuitBreaker' },
      { workflowId: 'keeper-h-circuit-s2', type: 'circuitBreaker' },
      { workflowId: 'keeper-h-notify-s1-g1-circuit-opened', type: 'notifyOperators' },
      { workflowId: 'someone-elses', type: 'theirWorkflow' },
    ];
    const flight = inFlight(running, [{ serviceId: 's1', escalation: 1, retryAt: null }], (s) => `keeper-h-circuit-${s}`, types);
    expect(flight).toEqual({
      circuits: [{ serviceId: 's1', escalation: 1, retryAt: null, workflowId: 'keeper-h-circuit-s1' }],
      strayCircuitWorkflows: ['keeper-h-circuit-s2'],
      alerts: ['keeper-h-notify-s1-g1-circuit-opened'],
      loopRuns: ['keeper-h-reconcile-events', 'keeper-h-gc-2026', 'keeper-h-health'],
    });
  });
});
