/** Another process that holds a state DB's write lock, as ah's writer would. No vitest imports. */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { waitFor } from './fixtures';

const ROOT = path.resolve(__dirname, '..', '..');

/**
 * A child process that takes the write lock (BEGIN IMMEDIATE), says so, holds it `lockMs`, commits and exits.
 * `locked()` resolves once it holds it; `done` once it has let go, at `releasedAt()` (epoch ms).
 */
export function holdWriteLock(file: string, lockMs: number) {
  // busy_timeout: the lock is taken even while keeper writes (the soak's worker writes all the time), never refused.
  const script = `const D = require('better-sqlite3'); const db = new D(process.argv[1]); db.pragma('busy_timeout = 30000');
    db.exec('BEGIN IMMEDIATE'); process.stdout.write('locked\\n');
    setTimeout(() => { db.exec('COMMIT'); db.close(); process.stdout.write('released\\n'); }, ${lockMs});`;
  const child = spawn(process.execPath, ['-e', script, file], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  let releasedAt = 0;
  const done = new Promise<void>((resolve) => child.on('exit', () => ((releasedAt = Date.now()), resolve())));
  return {
    locked: () => waitFor('the write lock', () => out.includes('locked'), 40_000),
    done,
    releasedAt: () => releasedAt,
    child,
  };
}
