/**
 * Builds a state DB the way ah itself leaves one: its effective DDL (test/fixtures/ah-effective-ddl.sql), every ah migration
 * recorded in schema_migrations, and some rows. keeper must open such a DB without changing anything of ah's.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { AH_MIGRATIONS } from '../../src/db/ah-schema';

export const AH_DDL = fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'ah-effective-ddl.sql'), 'utf8');

export function makeAhDb(file: string, opts: { migrations?: string[] } = {}): void {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec(AH_DDL);
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations ( name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL )`);
  const record = db.prepare('INSERT INTO schema_migrations (name, applied_at) VALUES (?, 1700000000)');
  for (const name of opts.migrations ?? AH_MIGRATIONS.map((m) => m.name)) record.run(name);
  db.exec(`
    INSERT INTO environment_templates (id, name, base_image, memory_mb, cpu_millicores, disk_mb, egress_policy, created_at, updated_at)
      VALUES ('tmpl_default', 'default', 'ubuntu:24.04', 512, 1000, 1024, 'allow', 1700000000, 1700000000);
    INSERT INTO tenants (id, name, email, created_at, updated_at) VALUES ('t1', 'Tenant One', 'one@example.com', 1700000000, 1700000000);
    INSERT INTO services (id, tenant_id, name, status, image, container_id, created_at, updated_at, crash_count, circuit_open, circuit_open_count)
      VALUES ('s1', 't1', 'web', 'running', 'nginx', 'abc123abc123', 1700000000, 1700000000, 2, 0, 1);
  `);
  db.close();
}

/** Everything of ah's in a DB: schema text and every row, keeper_* tables excluded. */
export function ahSnapshot(file: string): { schema: string[]; rows: Record<string, unknown[]> } {
  const db = new Database(file, { readonly: true });
  try {
    const objects = db
      .prepare(`SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'keeper_%' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
      .all() as { type: string; name: string; sql: string | null }[];
    const rows: Record<string, unknown[]> = {};
    for (const o of objects.filter((x) => x.type === 'table')) rows[o.name] = db.prepare(`SELECT * FROM "${o.name}" ORDER BY rowid`).all();
    return { schema: objects.map((o) => `${o.type} ${o.name}: ${o.sql ?? ''}`), rows };
  } finally {
    db.close();
  }
}
