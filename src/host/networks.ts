/**
 * ah's networks, made on demand and shared by every keeper process of a host: tenant networks for services
 * and environments, and the warm pool's `ah-pool`. Creation is serialised by a host lock because this engine
 * (20.10) does not refuse a second network of the same name.
 */
import fs from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import type { Engine } from '../docker/engine';
import type { HostDeps } from './deps';

/** A holder that died stops refreshing its lock; after this long another process takes it over. */
const LOCK_STALE_MS = 30_000;
/** How long a caller waits for the lock before it gives up with an error: twice the stale time. */
const LOCK_RETRIES = { retries: 600, minTimeout: 10, maxTimeout: 100, factor: 1.1 };

/**
 * Runs `fn` under a lock that every keeper process of this host shares: a lock directory next to the state DB.
 * It is waited for asynchronously, never as a SQLite lock held across a Docker call (which would stall the
 * event loop), and a lock whose holder died is taken over once stale.
 */
async function withHostLock<T>(db: HostDeps['db'], key: string, fn: () => Promise<T>): Promise<T> {
  const dir = path.join(path.dirname(db.name), '.keeper-locks');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const target = path.join(dir, key.replace(/[^A-Za-z0-9_.-]/g, '_'));
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(target, { realpath: false, stale: LOCK_STALE_MS, retries: LOCK_RETRIES });
  } catch (err) {
    throw new Error(`host lock ${target} not acquired: ${(err as Error).message}`);
  }
  try {
    return await fn();
  } finally {
    await release().catch(() => undefined); // a lock taken over as stale is no longer ours to release
  }
}

/**
 * The id of network `name`, created (internal, as ah does, with the bridge `options` given) when absent. Two
 * networks of one name would make every later start on that name fail as ambiguous, so creation happens under
 * a host lock. Should duplicates exist anyway (made by something else), everyone uses the smallest id.
 */
export async function resolveNetwork(
  db: HostDeps['db'],
  docker: Pick<Engine, 'listNetworks' | 'ensureNetwork'>,
  name: string,
  options?: Record<string, string>,
): Promise<string> {
  const exact = async () =>
    (await docker.listNetworks(name))
      .filter((n) => n.name === name)
      .map((n) => n.id)
      .sort();
  const existing = await exact();
  if (existing.length > 0) return existing[0];
  return withHostLock(db, `network-${name}`, async () => {
    const again = await exact();
    if (again.length > 0) return again[0];
    return docker.ensureNetwork(name, { internal: true, options });
  });
}
