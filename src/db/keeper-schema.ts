/**
 * keeper's own tables. They all start with `keeper_`, so that ah never sees a change to its own schema.
 * Append new migrations at the end; never edit one that has shipped.
 */
import type { Migration } from './ah-schema';

export const KEEPER_MIGRATIONS: Migration[] = [
  {
    name: 'keeper_001_loop_results',
    sql: `
CREATE TABLE keeper_loop_results (
  loop TEXT PRIMARY KEY,            -- reconcile | gc | pool | health
  host_id TEXT NOT NULL,
  workflow_id TEXT NOT NULL DEFAULT '',
  finished_at INTEGER NOT NULL,     -- unix seconds
  result_json TEXT NOT NULL
);`,
  },
];
