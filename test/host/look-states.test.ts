/**
 * keeper_look_states (src/db/look-states.ts) and keeper_request_failures (src/db/request-failures.ts) on a real SQLite
 * file: what `keeper status` says of each local look, and of the run requests Temporal has not taken.
 */
import { describe, expect, it } from 'vitest';
import { readLookStates, recordLookState } from '../../src/db/look-states';
import { clearRequestFailure, readRequestFailures, recordRequestFailure } from '../../src/db/request-failures';
import { memoryHost } from './world';

describe('look states', () => {
  it('keep the last look that worked, the last request, and a failure with since when, per host and loop', () => {
    const { db } = memoryHost();
    recordLookState(db, 'h1', 'reconcile', { found: 2, requested: true }, 100);
    recordLookState(db, 'h1', 'reconcile', { found: 0, requested: false }, 110);
    recordLookState(db, 'h2', 'reconcile', { found: 1, requested: false }, 110);
    expect(readLookStates(db, 'h1')).toEqual([
      { loop: 'reconcile', lookedAt: 110, found: 0, requestedAt: 100, error: '', failingSince: null },
    ]);

    recordLookState(db, 'h1', 'reconcile', { error: 'connect ENOENT /var/run/docker.sock' }, 120);
    recordLookState(db, 'h1', 'reconcile', { error: 'connect ECONNREFUSED' }, 130);
    recordLookState(db, 'h1', 'gc', { error: 'engine down' }, 130);
    expect(readLookStates(db, 'h1')).toEqual([
      { loop: 'gc', lookedAt: null, found: 0, requestedAt: null, error: 'engine down', failingSince: 130 },
      { loop: 'reconcile', lookedAt: 110, found: 0, requestedAt: 100, error: 'connect ECONNREFUSED', failingSince: 120 },
    ]);

    recordLookState(db, 'h1', 'reconcile', { found: 1, requested: true }, 140);
    expect(readLookStates(db, 'h1')[1]).toEqual({
      loop: 'reconcile',
      lookedAt: 140,
      found: 1,
      requestedAt: 140,
      error: '',
      failingSince: null,
    });
    expect(readLookStates(db, 'h2')).toHaveLength(1);
  });
});

describe('request failures', () => {
  it('keep the failing request of each loop with since when, until it is taken; a worker start clears its host', () => {
    const { db } = memoryHost();
    const refused = { loop: 'reconcile', why: 'docker events', error: 'schedule not found', refused: true, failingSince: 100, attempts: 1 };
    recordRequestFailure(db, 'h1', refused, 100);
    recordRequestFailure(db, 'h1', { ...refused, attempts: 4 }, 160);
    recordRequestFailure(db, 'h1', { ...refused, loop: 'gc', why: 'disk pressure', refused: false, error: '14 UNAVAILABLE' }, 160);
    recordRequestFailure(db, 'h2', refused, 100);
    expect(readRequestFailures(db, 'h1')).toEqual([
      { loop: 'gc', why: 'disk pressure', error: '14 UNAVAILABLE', refused: false, failingSince: 100, attempts: 1 },
      { ...refused, attempts: 4 },
    ]);
    clearRequestFailure(db, 'h1', 'gc');
    expect(readRequestFailures(db, 'h1').map((f) => f.loop)).toEqual(['reconcile']);
    clearRequestFailure(db, 'h1');
    expect(readRequestFailures(db, 'h1')).toEqual([]);
    expect(readRequestFailures(db, 'h2')).toHaveLength(1);
  });
});
