/**
 * A second writer on a state DB, for the backup drill: in a loop, one transaction writes sequence number n to a
 * keeper table (keeper_reported_problems) and to an ah table (the tenant DRILL_TENANT's name). A consistent copy
 * holds the same n in both. Runs until killed; prints `writing` once its first transaction committed.
 */
import { openStateDb } from '../../src/db/open';

export const DRILL_TENANT = 'drill-writer';

function main(): void {
  const db = openStateDb(process.env.DRILL_DB!, { create: false });
  db.prepare(`INSERT OR IGNORE INTO tenants (id, name, email, created_at, updated_at) VALUES (?, '0', 'drill@example.com', 1, 1)`).run(
    DRILL_TENANT,
  );
  // Over a thousand pages: a copy takes many of better-sqlite3's default 100-page steps, between which this writer writes.
  db.prepare(`INSERT OR IGNORE INTO keeper_reported_problems (subject, problem, first_seen) VALUES ('drill-padding', ?, 0)`).run(
    'x'.repeat(4_000_000),
  );
  const problem = db.prepare(`INSERT INTO keeper_reported_problems (subject, problem, first_seen) VALUES ('drill', ?, ?)`);
  const tenant = db.prepare('UPDATE tenants SET name = ? WHERE id = ?');
  const write = db.transaction((n: number) => {
    problem.run(String(n), n);
    tenant.run(String(n), DRILL_TENANT);
  });
  let n = 0;
  const step = () => {
    write.immediate(++n);
    if (n === 1) process.stdout.write('writing\n');
    setTimeout(step, 2);
  };
  step();
}

if (process.env.DRILL_DB) main(); // the test imports DRILL_TENANT from here too
