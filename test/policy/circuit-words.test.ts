/** A circuit's words (src/policy/circuit-words.ts): its run's summary and its current details in the Temporal UI. */
import { describe, expect, it } from 'vitest';
import { circuitDetails, circuitSummary, openingWhy } from '../../src/policy/circuit-words';

const RETRY_AT_SEC = 1_900_000_000; // 2030-03-17T17:46:40Z

describe('circuit words', () => {
  it('say why a circuit opened, in the policy that opened it', () => {
    expect(openingWhy(3, { windowSec: 10, threshold: 3 }, 2)).toBe('3 crashes within 10s (threshold 3), opening 2');
    expect(openingWhy(1, { windowSec: 600, threshold: 1 }, 1)).toBe('1 crash within 600s (threshold 1), opening 1');
  });

  it('give a circuit run its summary: why, or taken over, and until when', () => {
    expect(
      circuitSummary({ serviceId: 's1', generation: 2, retryAt: RETRY_AT_SEC, why: '3 crashes within 10s (threshold 3), opening 2' }),
    ).toBe('s1: circuit opened: 3 crashes within 10s (threshold 3), opening 2; retries at 2030-03-17T17:46:40Z');
    expect(circuitSummary({ serviceId: 's1', generation: 2, retryAt: RETRY_AT_SEC })).toBe(
      's1: open circuit taken over (opened earlier, by ah or by keeper); retries at 2030-03-17T17:46:40Z',
    );
  });

  it('say where a circuit stands, with the last death that opened it', () => {
    const base = { serviceId: 's1', generation: 2, retryAt: RETRY_AT_SEC };
    const deaths = [
      { diedAtMs: 1, reason: 'container exited (exit code 1)', containerId: 'c' },
      { diedAtMs: 2, reason: 'container exited (exit code 137 (OOM killed))', containerId: 'c' },
    ];
    expect(circuitDetails({ ...base, phase: 'open', deaths })).toBe(
      'open (generation 2) until 2030-03-17T17:46:40Z; 2 recorded deaths in its window, the last: container exited (exit code 137 (OOM killed)); reset: keeper circuit reset s1',
    );
    expect(circuitDetails({ ...base, phase: 'recovering' })).toBe('recovering (generation 2)');
    expect(circuitDetails({ ...base, phase: 'closed', closedBy: 'timer', status: 'running' })).toBe('closed by its timer; service running');
    expect(circuitDetails({ ...base, phase: 'closed', closedBy: 'superseded' })).toBe('closed already (generation 2): nothing to recover');
  });
});
