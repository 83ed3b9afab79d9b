/**
 * A seeded generator of nonsense rows in every column keeper's loops read: NULL, empty, very long, wrong type,
 * negative, far-future. Rows go in through a connection of their own with foreign keys and CHECK constraints
 * off, as a buggy ah (or a hand edit) could leave them; a NOT NULL column that refuses NULL gets ''.
 * The oracle (`expectedProblems`) is written from the documented rules, apart from keeper's code.
 */
import crypto from 'node:crypto';
import Database from 'better-sqlite3';
import { rng, type Rng } from '../helpers/rng';

const NOW = Math.floor(Date.now() / 1000);
const LONG = 'x'.repeat(100_000);
const FAR_FUTURE = 32_503_680_000; // year 3000

const containerIds = (r: Rng) => [
  null,
  '',
  'zzz',
  LONG,
  r.hex(64),
  r.hex(12),
  -1,
  3.5,
  'DEADBEEFDEADBEEF',
  `${r.hex(12)}; rm -rf /`,
  r.hex(12).toUpperCase(),
];
const times = [null, -1, 0, NOW - 3600, NOW + 3600, FAR_FUTURE, 'soon', 1e300, 2.5];
const counts = [0, -1, 'abc', 1e18, null, 2.5, 999_999];
const flags = [0, 1, -1, 7, 'yes', null];

export interface BadWorld {
  services: string[];
  databases: string[];
  environments: string[];
  pool: string[];
  snapshots: string[];
  inserted: number;
  refused: number;
}

export function insertBadRows(
  file: string,
  seed: number,
  n: { services: number; databases: number; environments: number; pool: number; snapshots: number },
): BadWorld {
  const r = rng(seed);
  const db = new Database(file);
  db.pragma('foreign_keys = OFF');
  db.pragma('ignore_check_constraints = ON');
  const world: BadWorld = { services: [], databases: [], environments: [], pool: [], snapshots: [], inserted: 0, refused: 0 };
  const tenant = () => r.pick([`tn${r.hex(6)}`, '', LONG, 7, null]);
  const run = (sql: string, values: unknown[]): boolean => {
    const fixed = values.map((v) => (v === undefined ? null : v));
    try {
      db.prepare(sql).run(...fixed);
    } catch {
      // NOT NULL: the same row with '' where NULL was refused
      try {
        db.prepare(sql).run(...fixed.map((v, i) => (i === 0 || v !== null ? v : '')));
      } catch {
        world.refused++;
        return false;
      }
    }
    world.inserted++;
    return true;
  };
  for (let i = 0; i < n.services; i++) {
    const id = `bad-svc-${seed}-${i}`;
    const ok = run(
      `INSERT INTO services (id, tenant_id, name, status, image, container_id, created_at, updated_at, crash_count, circuit_open,
        last_crashed_at, crash_window_start, circuit_retry_at, circuit_open_count) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
      [
        id,
        tenant(),
        r.pick(['', id, LONG]),
        r.pick(['running', 'crashed', 'stopped', 'deploying', '', 'RUNNING', LONG, 42, null, 'failed', 'restarting']),
        r.pick([null, '', 'keeper-test/busybox:latest', LONG, 5]),
        r.pick(containerIds(r)),
        r.pick(times),
        r.pick(times),
        r.pick(counts),
        r.pick(flags),
        r.pick(times),
        r.pick(times),
        r.pick(times),
        r.pick(counts),
      ],
    );
    if (ok) world.services.push(id);
  }
  for (let i = 0; i < n.databases; i++) {
    const id = `bad-db-${seed}-${i}`;
    if (
      run(
        `INSERT INTO databases (id, tenant_id, name, type, status, container_id, password_encrypted, volume_name, created_at, updated_at)
        VALUES (?,?,?,?,?,?,'',?,?,?)`,
        [
          id,
          tenant(),
          'd',
          r.pick(['postgres', '', 9]),
          r.pick(['ready', 'unavailable', '', null, LONG, 1]),
          r.pick(containerIds(r)),
          r.pick([null, '', `ah-db-${r.hex(6)}`, LONG, '../../etc']),
          r.pick(times),
          r.pick(times),
        ],
      )
    )
      world.databases.push(id);
  }
  for (let i = 0; i < n.environments; i++) {
    const id = `bad-env-${seed}-${i}`;
    if (
      run(
        `INSERT INTO environments (id, tenant_id, name, template_id, status, container_id, volume_name, lease_expires_at, last_activity_at,
        created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)`,
        [
          id,
          tenant(),
          'e',
          r.pick(['default', '', 'nope', LONG]),
          r.pick(['running', 'stopped', 'creating', '', null, 3, LONG]),
          r.pick(containerIds(r)),
          r.pick([null, '', `ah-env-${r.hex(6)}`, LONG]),
          r.pick(times),
          r.pick(times),
          r.pick(times),
          r.pick(times),
        ],
      )
    )
      world.environments.push(id);
  }
  for (let i = 0; i < n.pool; i++) {
    const id = `bad-wp-${seed}-${i}`;
    if (
      run(`INSERT INTO warm_pool (id, template_id, container_id, volume_name, status, created_at) VALUES (?,?,?,?,?,?)`, [
        id,
        r.pick(['default', '', 'nope', LONG, 4]),
        r.pick(containerIds(r)),
        r.pick([null, '', `ah-pool-${r.hex(6)}`, LONG]),
        r.pick(['ready', 'claimed', '', null, LONG]),
        r.pick(times),
      ])
    )
      world.pool.push(id);
  }
  for (let i = 0; i < n.snapshots; i++) {
    const id = `bad-snap-${seed}-${i}`;
    if (
      run(`INSERT INTO snapshots (id, tenant_id, service_id, name, image_ref, created_at) VALUES (?,?,?,?,?,?)`, [
        id,
        tenant(),
        r.pick(['', LONG, `svc${r.hex(4)}`, null]),
        's',
        r.pick(['', LONG, 'ah-snapshot:x', null, 'busybox:latest', 7]),
        r.pick(times),
      ])
    )
      world.snapshots.push(id);
  }
  db.close();
  return world;
}

const KNOWN = new Set(['created', 'deploying', 'running', 'stopped', 'crashed', 'failed', 'restarting']);
const isCount = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 0;
const validCid = (v: unknown) => typeof v === 'string' && /^[0-9a-f]{12,64}$/.test(v);

/** The subjects keeper must report (once each), from the rows as stored. */
export function expectedProblems(file: string): Set<string> {
  const db = new Database(file, { readonly: true });
  const out = new Set<string>();
  for (const s of db
    .prepare('SELECT id, status, container_id, crash_count, circuit_open, circuit_open_count, circuit_retry_at FROM services')
    .all() as Record<string, unknown>[]) {
    const bad =
      !KNOWN.has(s.status as string) ||
      !isCount(s.crash_count) ||
      !isCount(s.circuit_open_count) ||
      (s.circuit_open === 1 && !(Number.isSafeInteger(s.circuit_retry_at) && (s.circuit_retry_at as number) >= 0)) ||
      (['running', 'crashed'].includes(s.status as string) && s.circuit_open === 0 && !validCid(s.container_id));
    if (bad) out.add(`service:${s.id}`);
  }
  for (const d of db.prepare(`SELECT id, container_id FROM databases WHERE status = 'ready'`).all() as Record<string, unknown>[]) {
    if (!validCid(d.container_id)) out.add(`database:${d.id}`);
  }
  // A running environment whose lease has expired is stopped (DB only) before it is looked at.
  const leaseExpired = (v: unknown) => typeof v === 'number' && v < Math.floor(Date.now() / 1000);
  for (const e of db.prepare(`SELECT id, container_id, lease_expires_at FROM environments WHERE status = 'running'`).all() as Record<
    string,
    unknown
  >[]) {
    if (leaseExpired(e.lease_expires_at)) continue;
    if (!validCid(e.container_id)) out.add(`environment:${e.id}`);
  }
  db.close();
  return out;
}

export const randomName = () => crypto.randomBytes(3).toString('hex');
