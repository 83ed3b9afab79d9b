/** The `keeper` command as an operator runs it: the built bin, real exit codes, one-line errors. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStateDb } from '../src/db/open';
import { keeper } from './helpers/cli';
import { tempDir } from './helpers/fixtures';

describe('keeper', () => {
  it('prints help and exits 0', async () => {
    const r = await keeper(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Usage: keeper');
    expect(r.stdout).toMatch(/worker\s/);
  });

  it('exits 2 with one line naming a bad setting, given as a flag or a variable', async () => {
    const flag = await keeper(['health', '--crash-threshold', 'lots']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toBe(`keeper: option '--crash-threshold <value>' argument 'lots' is invalid. must be an integer, got "lots"\n`);
    const env = await keeper(['health'], { KEEPER_GC_MIN_AGE: 'ten' });
    expect(env.code).toBe(2);
    expect(env.stderr).toBe(
      `keeper: option '--gc-min-age <value>' value 'ten' from env 'KEEPER_GC_MIN_AGE' is invalid. "ten" is not a duration (use e.g. 500ms, 30s, 10m, 4h, 30d)\n`,
    );
  });

  it('exits 2 on an unknown command or option', async () => {
    expect((await keeper(['frobnicate'])).code).toBe(2);
    expect((await keeper(['health', '--no-such-flag'])).code).toBe(2);
  });

  it('exits 1 with one line when the state DB is not usable', async () => {
    const notSqlite = path.join(tempDir(), 'state.db');
    fs.writeFileSync(notSqlite, 'not a database, but a file of text long enough for SQLite to read a header from it');
    const r = await keeper(['health', '--db', notSqlite]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^keeper: state DB ${notSqlite}: .*\\n$`));
  });

  it('runs the health workflow on an embedded Temporal when TEMPORAL_ADDRESS is unset', async () => {
    const db = path.join(tempDir(), 'state.db');
    openStateDb(db).close(); // as the host's worker would have: only `keeper worker` creates a state DB
    const r = await keeper(['health', '--json', '--db', db, '--host-id', 'cli-test']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const health = JSON.parse(r.stdout);
    expect(health).toMatchObject({
      taskQueue: 'keeper-cli-test',
      engine: { reachable: true },
      schema: { ah: 'state_019_env_previews.sql' },
    });
  });
});
