/**
 * ah's networks, made on demand and shared by every keeper process of a host: tenant networks for services
 * and environments, and the warm pool's `ah-pool`. Creation is serialised by a host lock because this engine
 * (20.10) does not refuse a second network of the same name.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { DockerClient } from '../docker/client';
import type { ActivityDeps } from './deps';

/**
 * A lock shared by every keeper process of this host: a directory next to the state DB, made with an atomic
 * mkdir. It is waited for asynchronously (never a SQLite lock held across a Docker call, which would stall
 * the event loop), and a holder that died is overtaken after `staleMs`.
 */
export async function withHostLock<T>(db: ActivityDeps['db'], key: string, fn: () => Promise<T>, staleMs = 30_000): Promise<T> {
  const dir = path.join(path.dirname(db.name), '.keeper-locks');
  fs.mkdirSync(dir, { recursive: true });
  const lock = path.join(dir, key.replace(/[^A-Za-z0-9_.-]/g, '_'));
  const deadline = Date.now() + 2 * staleMs;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const age = (() => { try { return Date.now() - fs.statSync(lock).mtimeMs; } catch { return 0; } })();
      if (age > staleMs) fs.rmSync(lock, { recursive: true, force: true });
      else if (Date.now() > deadline) throw new Error(`host lock ${lock} still held after ${2 * staleMs} ms`);
      else await new Promise((r) => setTimeout(r, 10));
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * The id of network `name`, created (internal, as ah does, with the bridge `options` given) when absent. Two
 * networks of one name would make every later start on that name fail as ambiguous, so creation happens under
 * a host lock. Should duplicates exist anyway (made by something else), everyone uses the smallest id.
 */
export async function resolveNetwork(
  db: ActivityDeps['db'],
  docker: DockerClient,
  name: string,
  options?: Record<string, string>,
): Promise<string> {
  const exact = async () => (await docker.listNetworks(name)).filter((n) => n.name === name).map((n) => n.id).sort();
  const existing = await exact();
  if (existing.length > 0) return existing[0];
  return withHostLock(db, `network-${name}`, async () => {
    const again = await exact();
    if (again.length > 0) return again[0];
    return docker.ensureNetwork(name, { internal: true, options });
  });
}
