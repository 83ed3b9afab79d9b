/**
 * File modes of what keeper creates, and static checks over src/: no shell, one process spawn (the Temporal
 * CLI, with an argument array), Docker reached only through the adapter, SQL built from code, not from data.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStateDb } from '../../src/db/open';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { tempDir } from '../helpers/fixtures';

const SRC = path.resolve(__dirname, '..', '..', 'src');
const mode = (p: string) => fs.statSync(p).mode & 0o777;
let server: DevServer | undefined;
afterAll(async () => {
  await server?.stop();
});

function sources(dir = SRC): { file: string; text: string }[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return p.endsWith('.ts') ? [{ file: path.relative(SRC, p), text: fs.readFileSync(p, 'utf8') }] : [];
  });
}

describe('file modes', () => {
  it('the data directory is 0700; the DB and its -wal and -shm files are 0600, whatever the umask', () => {
    const old = process.umask(0o000); // the most permissive umask: the modes must come from keeper
    try {
      const dir = path.join(tempDir('keeper-rel-modes-'), 'data', 'nested');
      const db = openStateDb(path.join(dir, 'state.db'));
      db.prepare(`INSERT INTO keeper_reported_problems (subject, problem, first_seen) VALUES ('s', 'p', 1)`).run();
      const files = ['state.db', 'state.db-wal', 'state.db-shm'].map((f) => path.join(dir, f));
      const modes = Object.fromEntries([[dir, mode(dir)], [path.dirname(dir), mode(path.dirname(dir))], ...files.map((f) => [f, mode(f)])]);
      console.log(
        'file modes:',
        JSON.stringify(Object.fromEntries(Object.entries(modes).map(([k, v]) => [path.basename(k), (v as number).toString(8)]))),
      );
      expect(mode(dir)).toBe(0o700);
      expect(mode(path.dirname(dir))).toBe(0o700);
      for (const f of files) expect(mode(f), f).toBe(0o600);
      db.close();
    } finally {
      process.umask(old);
    }
  });

  it('the embedded Temporal keeps its DB private: 0600 in a 0700 directory', async () => {
    const dir = path.join(tempDir('keeper-rel-modes-'), 'data');
    const dbFile = path.join(dir, 'temporal.db');
    server = await startDevServer({ dbFile });
    await server.stop();
    server = undefined;
    expect(mode(dir)).toBe(0o700);
    expect(mode(dbFile)).toBe(0o600); // the CLI is started with umask 077
  }, 60_000);
});

describe('no shell command from data', () => {
  const all = sources();

  it("src/ never uses a shell: no exec/execSync/execFile, no shell option; spawns only of the Temporal CLI and the demo's worker, with argument arrays", () => {
    const offenders = all.filter(({ text }) => /\b(execSync|execFileSync|execFile|spawnSync)\s*\(|shell\s*:\s*true/.test(text));
    expect(offenders.map((o) => o.file)).toEqual([]);
    const spawns = all.filter(({ text }) => /from 'node:child_process'|require\('child_process'\)/.test(text)).map((o) => o.file);
    expect(spawns.sort()).toEqual(['demo.ts', path.join('temporal', 'dev-server.ts')]);
    expect(all.find((o) => o.file === path.join('temporal', 'dev-server.ts'))!.text).toMatch(/spawn\(binary, args, \{ stdio/);
    // The demo runs keeper's own bin with node, from fixed flags and the demo's own temp paths.
    expect(all.find((o) => o.file === 'demo.ts')!.text).toMatch(/spawn\(process\.execPath, \[BIN, 'worker', \.\.\.flags\]/);
  });

  it('Docker is reached only through the adapter (src/docker/client.ts)', () => {
    const users = all.filter(({ text }) => /from 'dockerode'|docker\.sock|\/var\/run\/docker/.test(text)).map((o) => o.file);
    expect(users).toEqual([path.join('docker', 'client.ts')]);
  });

  it('SQL text is never built from row or label values: interpolations in SQL are table names from code only', () => {
    const interpolated = all.flatMap(({ file, text }) =>
      [...text.matchAll(/\.(?:prepare|exec|pragma)\(\s*`([^`]*\$\{[^`]*)`/g)].map(
        (m) => `${file}: ${m[1].replace(/\s+/g, ' ').slice(0, 400)}`,
      ),
    );
    // Each one interpolates a constant of keeper's code (a migrations table name, a SELECT list, a pragma value, a
    // WHERE condition that a write and the look that predicts it share; `stillGone` names a table of SUBJECT_TABLES).
    for (const i of interpolated)
      expect(i).toMatch(
        /\$\{(table|CIRCUIT_SELECT|CRASH_RECORD_SELECT|NOTIFICATION_SELECT|TEMPLATE_COLUMNS|sql|busyTimeoutMs|columns|COLUMNS|THIS_ATTEMPT|where|placeholders|LEASE_EXPIRED|CREATE_STALE|DECAY_DUE|DEPLOY_STALE|TRUSTED_OPEN_CIRCUIT|OPEN_CIRCUIT_REF|trustedOpenCircuit\('s'\)|IS_CURRENT_OPENING\('s', 'o'\)|stillGone)\}/,
      );
    console.log(`SQL with interpolation: ${interpolated.length}`, interpolated);
  });
});
