/** keeper_look_states (src/db/look-states.ts) on a real SQLite file: what `keeper status` says of each local look. */
import { describe, expect, it } from 'vitest';
import { readLookStates, recordLookState } from '../../src/db/look-states';
import { memoryHost } from './world';

describe('look states', () => {
  it('keep the last look that worked, the last ask, and a failure with since when, per host and loop', () => {
    const { db } = memoryHost();
    recordLookState(db, 'h1', 'reconcile', { found: 2, asked: true }, 100);
    recordLookState(db, 'h1', 'reconcile', { found: 0, asked: false }, 110);
    recordLookState(db, 'h2', 'reconcile', { found: 1, asked: false }, 110);
    expect(readLookStates(db, 'h1')).toEqual([{ loop: 'reconcile', lookedAt: 110, found: 0, askedAt: 100, error: '', failingSince: null }]);

    recordLookState(db, 'h1', 'reconcile', { error: 'connect ENOENT /var/run/docker.sock' }, 120);
    recordLookState(db, 'h1', 'reconcile', { error: 'connect ECONNREFUSED' }, 130);
    recordLookState(db, 'h1', 'gc', { error: 'engine down' }, 130);
    expect(readLookStates(db, 'h1')).toEqual([
      { loop: 'gc', lookedAt: null, found: 0, askedAt: null, error: 'engine down', failingSince: 130 },
      { loop: 'reconcile', lookedAt: 110, found: 0, askedAt: 100, error: 'connect ECONNREFUSED', failingSince: 120 },
    ]);

    recordLookState(db, 'h1', 'reconcile', { found: 1, asked: true }, 140);
    expect(readLookStates(db, 'h1')[1]).toEqual({
      loop: 'reconcile',
      lookedAt: 140,
      found: 1,
      askedAt: 140,
      error: '',
      failingSince: null,
    });
    expect(readLookStates(db, 'h2')).toHaveLength(1);
  });
});
