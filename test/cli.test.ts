/** The `keeper` command as an operator runs it: the built bin, real exit codes, one-line errors. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { keeper } from './helpers/cli';
import { freshDb, tempDir } from './helpers/fixtures';

/** A state DB as this host's worker makes it, closed again. */
function freshDbFile(): { file: string } {
  const { db, file } = freshDb();
  db.close();
  return { file };
}

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
    expect(env.stderr).toBe(`keeper: option '--gc-min-age <value>' value 'ten' from env 'KEEPER_GC_MIN_AGE' is invalid. "ten" is not a duration (use e.g. 500ms, 30s, 10m, 4h, 30d)\n`);
  });

  it('exits 2 on an unknown command or option', async () => {
    expect((await keeper(['frobnicate'])).code).toBe(2);
    expect((await keeper(['health', '--no-such-flag'])).code).toBe(2);
  });

  it('exits 1 with one line when the state DB is not usable', async () => {
    const garbage = path.join(tempDir(), 'state.db');
    fs.writeFileSync(garbage, 'not a database, and more than a header long '.repeat(4));
    const r = await keeper(['health', '--db', garbage]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`keeper: state DB ${garbage}: file is not a database\n`);
  });

  it('exits 2 with one line when the state DB does not exist, and creates nothing: only the worker creates one', async () => {
    const notADir = path.join(tempDir(), 'plain-file');
    fs.writeFileSync(notADir, '');
    const r = await keeper(['health', '--db', path.join(notADir, 'state.db')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`keeper: state DB ${notADir}/state.db: does not exist (only \`keeper worker\` creates one; check --db)\n`);
  });

  it('runs the health workflow on an embedded Temporal when TEMPORAL_ADDRESS is unset', async () => {
    const { file: db } = freshDbFile();
    const r = await keeper(['health', '--json', '--db', db, '--host-id', 'cli-test']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const health = JSON.parse(r.stdout);
    expect(health).toMatchObject({ taskQueue: 'keeper-cli-test', engine: { reachable: true }, schema: { ah: 'state_019_env_previews.sql' } });
  });
});
