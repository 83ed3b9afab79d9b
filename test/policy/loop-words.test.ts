import { describe, expect, it } from 'vitest';
import { lastCrashWords } from '../../src/cli/words';
import { loopNamed } from '../../src/loops/registry';
import { gcWords, refillWords, tickWords } from '../../src/policy/run-words';
import { agoWords } from '../../src/time';
import type { PoolRefillResult } from '../../src/contracts/pool';
import type { TickSummary } from '../../src/contracts/reconcile';

const TICK: TickSummary = {
  dockerReachable: true,
  checked: 3,
  inspected: 1,
  transientErrors: 0,
  engineStopsHeld: 0,
  crashes: 0,
  crashedServices: 0,
  opened: 0,
  unhealthyRestarted: 0,
  recovered: 0,
  missing: 0,
  databasesUnavailable: 0,
  databasesReady: 0,
  environmentsStopped: 0,
  containersStopped: 0,
  dockerActionErrors: 0,
  circuitsExpired: 0,
  failedDeploys: 0,
  failedEnvCreates: 0,
  expiredLeases: 0,
  decayed: 0,
  splitBrain: [],
  badInput: [],
};

const REFILL: PoolRefillResult = {
  detach: { detached: [], failed: [] },
  prune: { checked: 0, pruned: [], kept: [], replaced: [], finishedClaims: 0, strandedClaims: [] },
  disk: { level: 'ok', message: 'disk ok', flaggedPaths: [] },
  blocked: false,
  plan: { steps: [], ready: {}, pooled: ['tmpl_default', 'tmpl_node'], unknownTemplates: [], missingImages: [] },
  created: [],
  failed: [],
  ready: {},
};

describe('tickWords', () => {
  it('counts services, crashes and circuits opened, then only what happened', () => {
    expect(tickWords(TICK)).toBe('ok: 3 services, 0 crashes, 0 circuits opened');
    expect(tickWords({ ...TICK, checked: 1, crashes: 1, opened: 1, recovered: 2, expiredLeases: 1 })).toBe(
      'ok: 1 service, 1 crash, 1 circuit opened, 2 services running again, 1 lease expired',
    );
  });

  it('is a warning when the engine did not answer, or containers were skipped, or rows were bad', () => {
    expect(tickWords({ ...TICK, dockerReachable: false, failedDeploys: 1 })).toBe(
      'warning: docker unreachable: only the DB steps ran, nothing counted, 1 stale deploy failed',
    );
    expect(tickWords({ ...TICK, transientErrors: 2, badInput: [{ subject: 'service:s', problem: 'p' }] })).toBe(
      'warning: 3 services, 0 crashes, 0 circuits opened, 2 containers skipped after a transient error, 1 bad row or label skipped',
    );
  });

  it('takes a result recorded by an older keeper, with fields missing, as none of them', () => {
    expect(tickWords({ dockerReachable: true, checked: 2 })).toBe('ok: 2 services, 0 crashes, 0 circuits opened');
  });
});

describe('gcWords', () => {
  const cls = (c: string, removed: number, extra: object = {}) => ({
    class: c,
    planned: removed,
    removed,
    failed: 0,
    skipped: 0,
    ...extra,
  });
  it('says what it removed, by class', () => {
    expect(gcWords({ summary: [cls('containers', 1), cls('volumes', 1), cls('images', 0)] } as never)).toBe(
      'ok: removed 2 (containers 1, volumes 1)',
    );
    expect(gcWords({ summary: [cls('containers', 0)] } as never)).toBe('ok: nothing to remove');
  });
  it('warns of removals that failed, and is an error when a class could not be swept', () => {
    expect(gcWords({ summary: [cls('volumes', 1, { failed: 1 })] } as never)).toBe(
      'warning: removed 1 (volumes 1), 1 failed, kept for the next sweep',
    );
    expect(gcWords({ summary: [cls('images', 0, { error: 'engine returned 500' })] } as never)).toBe(
      'error: nothing to remove, images not swept: engine returned 500',
    );
  });
});

describe('refillWords', () => {
  it('puts the conditions first: a missing template image is a warning', () => {
    const r = {
      ...REFILL,
      plan: { ...REFILL.plan!, missingImages: [{ templateId: 'tmpl_node', name: 'node', image: 'node:22-bookworm' }] },
      created: [{ entryId: 'wp_1', templateId: 'tmpl_default', outcome: 'created' as const }],
    };
    expect(refillWords(r)).toBe('warning: template node image missing, 1 created');
  });
  it('says the disk guard blocked it, and nothing of creating', () => {
    const r = {
      ...REFILL,
      blocked: true,
      plan: null,
      disk: { level: 'block' as const, message: 'insufficient', flaggedPaths: ['/var/lib/docker'] },
    };
    expect(refillWords(r)).toBe('warning: blocked by the disk guard (/var/lib/docker)');
  });
  it('is an error when entries could not be made (a refused runtime)', () => {
    const r = { ...REFILL, failed: [{ entryId: 'wp_1', templateId: 'tmpl_default', error: 'tenant runtime runsc is not registered' }] };
    expect(refillWords(r)).toBe('error: 0 created, 1 not created: tenant runtime runsc is not registered');
  });
  it('reads a result recorded before detach and missingImages existed', () => {
    const { detach: _d, ...old } = REFILL;
    expect(
      refillWords({ ...old, plan: { steps: [], ready: {}, pooled: [], unknownTemplates: [] }, disk: { level: 'ok', message: 'disk ok' } }),
    ).toBe('ok: 0 created');
  });
});

describe("each loop's unit's words", () => {
  it("word each loop's result, a result recorded without some fields included, and show one that is no object as it is", () => {
    expect(loopNamed('reconcile')!.words(TICK)).toBe('ok: 3 services, 0 crashes, 0 circuits opened');
    expect(loopNamed('gc')!.words({})).toBe('ok: nothing to remove');
    expect(loopNamed('pool')!.words(REFILL)).toBe(refillWords(REFILL));
    expect(loopNamed('gc')!.words(null)).toBe('null');
    expect(loopNamed('health')).toBeUndefined(); // no unit: keeper status says it has no such loop
  });
});

describe('agoWords and lastCrashWords', () => {
  it('says seconds, minutes, hours and days as an operator reads them, past or to come', () => {
    expect([
      agoWords(988, 1000),
      agoWords(760, 1000),
      agoWords(1000 - 3 * 3600, 1000),
      agoWords(0, 3 * 86400),
      agoWords(2800, 1000),
    ]).toEqual(['12 s ago', '4 min ago', '3 h ago', '3 d ago', 'in 30 min']);
  });
  it('gives the time of death when known, else when keeper counted it', () => {
    expect(lastCrashWords({ reason: 'exit code 137 (OOM killed)', diedAtMs: 820_400, recordedAt: 830 }, 1000)).toBe(
      '3 min ago: exit code 137 (OOM killed)',
    );
    expect(lastCrashWords({ reason: 'exit code unknown, restarted by Docker', diedAtMs: null, recordedAt: 940 }, 1000)).toBe(
      'counted 60 s ago: exit code unknown, restarted by Docker',
    );
  });
});
