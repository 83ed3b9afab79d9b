/** The in-flight row rules (created, deploying, restarting) for each container condition: pure, no engine. */
import { describe, expect, it } from 'vitest';
import { inFlightOutcome, VANISHED_REASON, type ContainerCondition } from '../../src/policy/rows';

const conditions: ContainerCondition[] = ['running', 'exited', 'missing', 'transient'];

describe('inFlightOutcome', () => {
  it.each(['created', 'restarting'])('stops a %s row whose container is gone (404), and only then', (status) => {
    expect(inFlightOutcome(status, 'missing')).toEqual({ status: 'stopped', reason: VANISHED_REASON });
    for (const c of conditions.filter((x) => x !== 'missing')) expect(inFlightOutcome(status, c)).toBeUndefined();
  });

  it('leaves a deploying row to the stale-deploy timeout whatever its container', () => {
    for (const c of conditions) expect(inFlightOutcome('deploying', c)).toBeUndefined();
  });

  it('changes nothing on an engine error (anything but 404), in any state', () => {
    for (const s of ['created', 'deploying', 'restarting', 'running', 'crashed']) expect(inFlightOutcome(s, 'transient')).toBeUndefined();
  });

  it('is not the rule for watched or settled rows', () => {
    for (const s of ['running', 'crashed', 'stopped', 'failed']) expect(inFlightOutcome(s, 'missing')).toBeUndefined();
  });
});
