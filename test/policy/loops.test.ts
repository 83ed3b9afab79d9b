/**
 * The loops' registry (src/loops/registry.ts), which the worker's activities, the schedules, the looks and run
 * requests, uninstall, keeper status, keeper schedules, the README's settings table and bench:cost read instead of
 * names by hand: each loop's workflow types are workflows the bundle registers, every run type belongs to one loop,
 * its settings are SETTINGS' and its own, its activities are registered, and uninstall sorts a host's running
 * workflows by it.
 */
import { describe, expect, it } from 'vitest';
import { createActivities, LOOP_NAMES, LOOPS, loopOfWorkflowType, runTypes, SCHEDULED_LOOPS } from '../../src/loops/registry';
import { HOST_WORKFLOW_TYPES, loopSchedules } from '../../src/loops/schedules';
import type { HostDeps } from '../../src/host/deps';
import { silentLogger } from '../../src/log';
import { inFlight } from '../../src/policy/uninstall';
import { loadSettings, SETTINGS } from '../../src/settings';
import * as workflows from '../../src/workflows';
import { read } from '../helpers/repo-files';

describe('the loops registry', () => {
  it("names the loops, each schedule's workflow and the other runs, all registered workflows", () => {
    expect(LOOP_NAMES).toEqual(['reconcile', 'gc', 'pool']);
    for (const l of LOOPS) for (const type of runTypes(l)) expect(Object.keys(workflows)).toContain(type);
    expect(LOOPS.map((l) => l.otherRuns ?? {})).toEqual([{ events: 'reconcileOnEvents' }, {}, {}]);
  });

  it('gives each run type its loop, once, and no loop to the workflows that are none', () => {
    const all = LOOPS.flatMap(runTypes);
    expect(new Set(all).size).toBe(all.length);
    expect(all.map(loopOfWorkflowType)).toEqual(['reconcile', 'reconcile', 'gc', 'pool']);
    for (const other of ['circuitBreaker', 'notifyOperators', 'hostHealth', 'nonesuch']) expect(loopOfWorkflowType(other)).toBeUndefined();
  });

  it('makes each backstop schedule from its settings: interval, and the first delay of a loop that has one', () => {
    const settings = loadSettings({ reconcileInterval: '2h', gcInterval: '3h', gcFirstDelay: '5m', poolInterval: '4h' }, {});
    expect(loopSchedules(settings)).toEqual([
      { loop: 'reconcile', workflowType: 'reconcileTick', everyMs: 7_200_000 },
      { loop: 'gc', workflowType: 'gcSweep', everyMs: 10_800_000, firstDelayMs: 300_000 },
      { loop: 'pool', workflowType: 'poolRefill', everyMs: 14_400_000 },
    ]);
    expect(loopSchedules(settings, ['pool']).map((s) => s.loop)).toEqual(['pool']);
    expect(SCHEDULED_LOOPS.map((l) => l.name)).toEqual(LOOP_NAMES);
  });

  it("owns each setting it names, and no setting twice; a flag that starts with a loop's name is that loop's", () => {
    const keys = new Set(SETTINGS.map((s) => s.key));
    const owned = LOOPS.flatMap((l) => l.settings);
    for (const key of owned) expect(keys).toContain(key);
    expect(new Set(owned).size).toBe(owned.length);
    for (const l of LOOPS) {
      const prefixed = SETTINGS.filter((s) => s.flag.startsWith(`${l.name}-`)).map((s) => s.key);
      expect(l.settings).toEqual(expect.arrayContaining(prefixed));
      for (const key of [l.look?.every, l.look?.firstDelay, l.schedule?.every, l.schedule?.firstDelay]) {
        if (key) expect(l.settings).toContain(key);
      }
    }
  });

  it("registers every loop's activities in the worker, with the host's own", () => {
    const names = Object.keys(createActivities({ log: silentLogger, settings: loadSettings({}, {}) } as unknown as HostDeps));
    for (const activity of ['reconcileHost', 'recordTickResult', 'runGcClass', 'recordGcSweep', 'planPoolRefill', 'recordPoolRefill'])
      expect(names).toContain(activity);
    for (const activity of ['readEngineInfo', 'holdCircuit', 'deliverNotification']) expect(names).toContain(activity);
  });

  it("sorts a host's running workflows for uninstall: loop runs (a reconcileOnEvents run included), circuits, alerts", () => {
    expect(HOST_WORKFLOW_TYPES).toEqual({
      circuit: 'circuitBreaker',
      alert: 'notifyOperators',
      stoppable: ['reconcileTick', 'reconcileOnEvents', 'gcSweep', 'poolRefill', 'hostHealth'],
    });
    const running = [
      { workflowId: 'keeper-h-reconcile-events', type: 'reconcileOnEvents' },
      { workflowId: 'keeper-h-gc-2026', type: 'gcSweep' },
      { workflowId: 'keeper-h-health', type: 'hostHealth' },
      { workflowId: 'keeper-h-circuit-s1', type: 'circuitBreaker' },
      { workflowId: 'keeper-h-circuit-s2', type: 'circuitBreaker' },
      { workflowId: 'keeper-h-notify-s1-g1-circuit-opened', type: 'notifyOperators' },
      { workflowId: 'someone-elses', type: 'theirWorkflow' },
    ];
    const flight = inFlight(
      running,
      [{ serviceId: 's1', escalation: 1, retryAt: null }],
      (s) => `keeper-h-circuit-${s}`,
      HOST_WORKFLOW_TYPES,
    );
    expect(flight).toEqual({
      circuits: [{ serviceId: 's1', escalation: 1, retryAt: null, workflowId: 'keeper-h-circuit-s1' }],
      strayCircuitWorkflows: ['keeper-h-circuit-s2'],
      alerts: ['keeper-h-notify-s1-g1-circuit-opened'],
      loopRuns: ['keeper-h-reconcile-events', 'keeper-h-gc-2026', 'keeper-h-health'],
    });
  });
});

describe('the loops the docs describe', () => {
  const section = (doc: string, heading: string) => {
    const text = read(doc);
    const at = text.indexOf(heading);
    expect(at, `${doc} has ${heading}`).toBeGreaterThan(-1);
    return text.slice(at, text.indexOf('\n## ', at + 1) === -1 ? undefined : text.indexOf('\n## ', at + 1));
  };

  it("gives each loop's look a bullet in docs/how-it-works.md's looks section, naming its interval's flag", () => {
    const looks = section('docs/how-it-works.md', '## Looking locally, acting durably');
    const bullets = [...looks.matchAll(/^- \*\*(\w+), every `--([\w-]+)`/gm)].map((m) => [m[1].toLowerCase(), m[2]]);
    const flagOf = (key: string) => SETTINGS.find((s) => s.key === key)!.flag;
    const expected = LOOPS.flatMap((l) => (l.look ? [[l.name, flagOf(l.look.every)]] : []));
    expect(bullets.sort()).toEqual(expected.sort());
  });

  it("shows how to add a loop in docs/development.md, beside adding a GC class, naming the registry and a unit's parts", () => {
    const adding = section('docs/development.md', '## Adding a loop');
    for (const cited of ['src/loops/registry.ts', 'src/loops/unit.ts', 'src/workflows/', 'record.ts', 'loopUnit'])
      expect(adding).toContain(cited);
    expect(read('docs/development.md').indexOf('## Adding a loop')).toBeLessThan(
      read('docs/development.md').indexOf('## Adding a GC class'),
    );
  });
});
