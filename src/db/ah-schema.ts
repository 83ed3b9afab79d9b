/**
 * ah's state-DB migrations, under ah's own file names, so that ah treats a DB that keeper created as fully
 * migrated, and keeper recognises a DB that ah created. Applied in this order they produce the effective DDL
 * of ah's effective schema (test/fixtures/ah-effective-ddl.sql) exactly: columns that ah added with ALTER TABLE are added with ALTER TABLE here too, in
 * the same order. keeper never changes these; its own state lives in `keeper_*` tables (keeper-schema.ts).
 */
export interface Migration {
  name: string;
  sql: string;
}

export const AH_MIGRATIONS: Migration[] = [
  {
    name: 'state_001_init.sql',
    sql: `
CREATE TABLE tenants (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  email TEXT UNIQUE NOT NULL,
  status TEXT NOT NULL DEFAULT 'active',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE tenant_quotas (
  tenant_id TEXT PRIMARY KEY REFERENCES tenants(id),
  max_services INTEGER NOT NULL DEFAULT 5,
  max_databases INTEGER NOT NULL DEFAULT 3,
  max_memory_mb INTEGER NOT NULL DEFAULT 2048,
  max_cpu_cores REAL NOT NULL DEFAULT 2.0,
  max_disk_gb INTEGER NOT NULL DEFAULT 20,
  api_rate_limit INTEGER NOT NULL DEFAULT 100
);
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  tenant_id TEXT NOT NULL REFERENCES tenants(id),
  name TEXT NOT NULL DEFAULT '',
  key_prefix TEXT NOT NULL,
  key_hash TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER,
  revoked_at INTEGER,
  last_used_at INTEGER
);
CREATE INDEX idx_api_keys_tenant ON api_keys(tenant_id);
CREATE INDEX idx_api_keys_prefix ON api_keys(key_prefix);
CREATE TABLE services (
  id TEXT PRIMARY KEY,
  tenant_id TEXT NOT NULL REFERENCES tenants(id),
  name TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'stopped',
  image TEXT,
  source_type TEXT,
  source_ref TEXT,
  container_id TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX idx_services_tenant ON services(tenant_id);`,
  },
  {
    name: 'state_002_service_env.sql',
    sql: `
ALTER TABLE services ADD COLUMN port INTEGER NOT NULL DEFAULT 8000;
CREATE TABLE service_env (
  service_id TEXT NOT NULL REFERENCES services(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value_encrypted TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (service_id, key)
);`,
  },
  { name: 'state_003_last_error.sql', sql: `ALTER TABLE services ADD COLUMN last_error TEXT NOT NULL DEFAULT '';` },
  {
    name: 'state_004_builds.sql',
    sql: `
CREATE TABLE builds (
  id TEXT PRIMARY KEY,
  service_id TEXT NOT NULL REFERENCES services(id) ON DELETE CASCADE,
  tenant_id TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending',
  source_type TEXT NOT NULL,
  source_url TEXT,
  source_ref TEXT DEFAULT 'main',
  image TEXT,
  nixpacks_plan TEXT,
  log TEXT DEFAULT '',
  started_at INTEGER,
  finished_at INTEGER,
  created_at INTEGER NOT NULL
);
CREATE INDEX idx_builds_service ON builds(service_id);
CREATE INDEX idx_builds_tenant ON builds(tenant_id);`,
  },
  {
    name: 'state_005_databases.sql',
    sql: `
CREATE TABLE databases (
  id TEXT PRIMARY KEY,
  tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  type TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'provisioning',
  container_id TEXT,
  host TEXT DEFAULT '127.0.0.1',
  port INTEGER,
  db_name TEXT,
  username TEXT,
  password_encrypted TEXT NOT NULL,
  connection_string_encrypted TEXT,
  volume_name TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX idx_databases_tenant ON databases(tenant_id);`,
  },
  {
    name: 'state_006_databases_port_unique.sql',
    sql: `CREATE UNIQUE INDEX idx_databases_port_unique ON databases(port) WHERE status NOT IN ('failed');`,
  },
  {
    name: 'state_007_circuit_breaker.sql',
    sql: `
ALTER TABLE services ADD COLUMN crash_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE services ADD COLUMN circuit_open INTEGER NOT NULL DEFAULT 0;
ALTER TABLE services ADD COLUMN last_crashed_at INTEGER;`,
  },
  { name: 'state_008_crash_window.sql', sql: `ALTER TABLE services ADD COLUMN crash_window_start INTEGER;` },
  {
    name: 'state_009_circuit_recovery.sql',
    sql: `
ALTER TABLE services ADD COLUMN circuit_retry_at INTEGER;
ALTER TABLE services ADD COLUMN circuit_open_count INTEGER NOT NULL DEFAULT 0;`,
  },
  {
    name: 'state_010_kanbans.sql',
    sql: `
CREATE TABLE kanbans (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    status TEXT NOT NULL DEFAULT 'provisioning',
    container_id TEXT,
    host TEXT DEFAULT '127.0.0.1',
    port INTEGER,
    admin_token_encrypted TEXT,
    url TEXT,
    volume_name TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE(tenant_id)
);
CREATE UNIQUE INDEX idx_kanbans_port_unique ON kanbans(port) WHERE status NOT IN ('failed');`,
  },
  {
    name: 'state_010_snapshots.sql',
    sql: `
CREATE TABLE snapshots (
  id TEXT PRIMARY KEY,
  tenant_id TEXT NOT NULL REFERENCES tenants(id),
  service_id TEXT NOT NULL REFERENCES services(id),
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  image_ref TEXT NOT NULL,
  env_encrypted TEXT NOT NULL DEFAULT '',
  db_dump_path TEXT NOT NULL DEFAULT '',
  resource_config TEXT NOT NULL DEFAULT '{}',
  port INTEGER NOT NULL DEFAULT 8000,
  created_at INTEGER NOT NULL
);
CREATE INDEX idx_snapshots_tenant ON snapshots(tenant_id);
CREATE INDEX idx_snapshots_service ON snapshots(service_id);`,
  },
  {
    name: 'state_011_service_dns_label.sql',
    sql: `
ALTER TABLE services ADD COLUMN dns_label TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX idx_services_dns_label ON services(dns_label) WHERE dns_label != '';`,
  },
  { name: 'state_012_service_url.sql', sql: `ALTER TABLE services ADD COLUMN url TEXT NOT NULL DEFAULT '';` },
  {
    name: 'state_013_deployments.sql',
    sql: `
CREATE TABLE deployments (
  id TEXT PRIMARY KEY,
  service_id TEXT NOT NULL REFERENCES services(id) ON DELETE CASCADE,
  tenant_id TEXT NOT NULL,
  build_id TEXT DEFAULT NULL,
  image TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending',
  trigger TEXT NOT NULL DEFAULT 'manual',
  container_id TEXT DEFAULT '',
  error_message TEXT DEFAULT '',
  started_at INTEGER NOT NULL,
  completed_at INTEGER,
  created_at INTEGER NOT NULL
);
CREATE INDEX idx_deployments_service ON deployments(service_id);
CREATE INDEX idx_deployments_tenant ON deployments(tenant_id);
CREATE INDEX idx_deployments_service_created ON deployments(service_id, created_at DESC);
CREATE INDEX idx_deployments_status ON deployments(status);`,
  },
  {
    name: 'state_014_quota_columns.sql',
    sql: `
ALTER TABLE tenant_quotas ADD COLUMN max_builds_concurrent INTEGER NOT NULL DEFAULT 3;
ALTER TABLE tenant_quotas ADD COLUMN max_env_vars_per_service INTEGER NOT NULL DEFAULT 50;`,
  },
  { name: 'state_015_deployment_cancelled_at.sql', sql: `ALTER TABLE deployments ADD COLUMN cancelled_at INTEGER;` },
  {
    name: 'state_016_environments.sql',
    sql: `
ALTER TABLE tenant_quotas ADD COLUMN max_environments INTEGER NOT NULL DEFAULT 2;
CREATE TABLE environments (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    template_id TEXT NOT NULL DEFAULT 'default',
    status TEXT NOT NULL DEFAULT 'creating',
    container_id TEXT DEFAULT '',
    volume_name TEXT DEFAULT '',
    lease_expires_at INTEGER,
    lease_duration_seconds INTEGER NOT NULL DEFAULT 3600,
    last_activity_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX idx_environments_tenant ON environments(tenant_id);
CREATE INDEX idx_environments_status ON environments(status);
CREATE INDEX idx_environments_lease ON environments(lease_expires_at);
CREATE UNIQUE INDEX idx_environments_tenant_name ON environments(tenant_id, name);
CREATE TABLE environment_templates (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    base_image TEXT NOT NULL DEFAULT 'ubuntu:24.04',
    description TEXT DEFAULT '',
    tools TEXT DEFAULT '[]',
    memory_mb INTEGER NOT NULL DEFAULT 512,
    cpu_millicores INTEGER NOT NULL DEFAULT 1000,
    disk_mb INTEGER NOT NULL DEFAULT 1024,
    egress_policy TEXT NOT NULL DEFAULT 'block',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
INSERT OR IGNORE INTO environment_templates (id, name, base_image, description, tools, memory_mb, cpu_millicores, disk_mb, egress_policy, created_at, updated_at)
VALUES ('tmpl_default', 'default', 'ubuntu:24.04', 'Default Ubuntu workspace', '[]', 512, 1000, 1024, 'allow', strftime('%s','now'), strftime('%s','now'));`,
  },
  {
    name: 'state_017_env_templates_seed.sql',
    sql: `
INSERT OR IGNORE INTO environment_templates (id, name, base_image, description, tools, memory_mb, cpu_millicores, disk_mb, egress_policy, created_at, updated_at)
VALUES
  ('tmpl_node', 'node', 'node:22-bookworm', 'Node.js 22 workspace', '["npm","yarn","npx"]', 1024, 1000, 2048, 'allow', strftime('%s','now'), strftime('%s','now')),
  ('tmpl_python', 'python', 'python:3.12-bookworm', 'Python 3.12 workspace', '["pip","pipenv","python3"]', 1024, 1000, 2048, 'allow', strftime('%s','now'), strftime('%s','now')),
  ('tmpl_go', 'go', 'golang:1.23-bookworm', 'Go 1.23 workspace', '["go"]', 1024, 2000, 2048, 'allow', strftime('%s','now'), strftime('%s','now'));`,
  },
  {
    name: 'state_018_warm_pool.sql',
    sql: `
CREATE TABLE warm_pool (
    id TEXT PRIMARY KEY,
    template_id TEXT NOT NULL,
    container_id TEXT NOT NULL,
    volume_name TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'ready',
    created_at INTEGER NOT NULL
);
CREATE INDEX idx_warm_pool_template_status ON warm_pool(template_id, status);`,
  },
  {
    name: 'state_019_env_previews.sql',
    sql: `
CREATE TABLE environment_previews (
    id TEXT PRIMARY KEY,
    environment_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
    tenant_id TEXT NOT NULL,
    name TEXT NOT NULL,
    port INTEGER NOT NULL,
    dns_label TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX idx_env_previews_env ON environment_previews(environment_id);
CREATE UNIQUE INDEX idx_env_previews_dns ON environment_previews(dns_label);
CREATE UNIQUE INDEX idx_env_previews_env_name ON environment_previews(environment_id, name);`,
  },
];

/** The columns keeper's loops read or write; a DB lacking any of them is not an ah state DB keeper can keep. */
export const AH_COLUMNS_KEEPER_NEEDS: Record<string, string[]> = {
  services: [
    'id',
    'tenant_id',
    'name',
    'status',
    'image',
    'container_id',
    'updated_at',
    'last_error',
    'crash_count',
    'circuit_open',
    'last_crashed_at',
    'crash_window_start',
    'circuit_retry_at',
    'circuit_open_count',
  ],
  deployments: ['id', 'service_id', 'tenant_id', 'image', 'status', 'trigger', 'error_message', 'started_at'],
  databases: ['id', 'status', 'container_id', 'volume_name', 'updated_at'],
  environments: ['id', 'tenant_id', 'status', 'container_id', 'volume_name', 'lease_expires_at', 'updated_at'],
  environment_templates: ['id', 'name', 'base_image', 'memory_mb', 'cpu_millicores'],
  warm_pool: ['id', 'template_id', 'container_id', 'volume_name', 'status', 'created_at'],
  kanbans: ['id', 'container_id', 'volume_name'],
  snapshots: ['id', 'tenant_id', 'service_id', 'image_ref', 'created_at'],
};
