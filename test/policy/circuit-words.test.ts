/** A circuit's words (src/policy/circuit-words.ts): its run's summary and its current details in the Temporal UI. */
import { describe, expect, it } from 'vitest';
import { circuitDetails, circuitSummary, openingWhy, openingWords } from '../../src/policy/circuit-words';

const RETRY_AT_SEC = 1_900_000_000; // 2030-03-17T17:46:40Z

describe('circuit words', () => {
  it('say why a circuit opened, in the policy that opened it', () => {
    expect(openingWhy(3, { windowSec: 10, threshold: 3 })).toBe('3 crashes within 10s (threshold 3)');
    expect(openingWhy(1, { windowSec: 600, threshold: 1 })).toBe('1 crash within 600s (threshold 1)');
  });

  it('name an opening by its number and its escalation, each one word', () => {
    expect(openingWords({ opening: 7, escalation: 2 })).toBe('opening 7, escalation 2');
    // A run that began before openings were numbered knows only its escalation.
    expect(openingWords({ escalation: 2 })).toBe('escalation 2');
    expect(openingWords({})).toBe('');
  });

  it('give a circuit run its summary: which opening, why or taken over, and until when', () => {
    expect(
      circuitSummary({ serviceId: 's1', opening: 7, escalation: 2, retryAt: RETRY_AT_SEC, why: '3 crashes within 10s (threshold 3)' }),
    ).toBe('s1: circuit opened (opening 7, escalation 2): 3 crashes within 10s (threshold 3); retries at 2030-03-17T17:46:40Z');
    expect(circuitSummary({ serviceId: 's1', opening: 8, escalation: 2, retryAt: RETRY_AT_SEC })).toBe(
      's1: open circuit taken over (opening 8, escalation 2): opened earlier, by ah or by keeper; retries at 2030-03-17T17:46:40Z',
    );
  });

  it('say where a circuit stands, with the last death that opened it', () => {
    const base = { serviceId: 's1', opening: 7, escalation: 2, retryAt: RETRY_AT_SEC };
    const deaths = [
      { diedAtMs: 1, reason: 'container exited (exit code 1)', containerId: 'c' },
      { diedAtMs: 2, reason: 'container exited (exit code 137 (OOM killed))', containerId: 'c' },
    ];
    expect(circuitDetails({ ...base, phase: 'open', deaths })).toBe(
      'open (opening 7, escalation 2) until 2030-03-17T17:46:40Z; 2 recorded deaths in its window, the last: container exited (exit code 137 (OOM killed)); reset: keeper circuit reset s1',
    );
    expect(circuitDetails({ ...base, phase: 'recovering' })).toBe('recovering (opening 7)');
    expect(circuitDetails({ ...base, phase: 'closed', closedBy: 'timer', status: 'running' })).toBe('closed by its timer; service running');
    expect(circuitDetails({ ...base, phase: 'closed', closedBy: 'superseded' })).toBe('closed already (opening 7): nothing to recover');
  });

  it('say where a run that began before openings were numbered stands, by its escalation', () => {
    const old = { serviceId: 's1', escalation: 2, retryAt: RETRY_AT_SEC };
    expect(circuitDetails({ ...old, phase: 'open' })).toBe(
      'open (escalation 2) until 2030-03-17T17:46:40Z; reset: keeper circuit reset s1',
    );
    expect(circuitDetails({ ...old, phase: 'recovering' })).toBe('recovering (escalation 2)');
  });
});
