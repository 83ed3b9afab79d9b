/**
 * docker-compose.temporal.yml and its mTLS variant cannot run here (no image registry is reachable), so this
 * parses them and checks what an operator relies on: the services, their images, ports and start order; and
 * that they run what the tests' real cluster runs (server version, plugin, schemas, search attributes, TLS).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { serverTlsFilesIn } from './helpers/cluster/certs';
import {
  DATABASES,
  DYNAMIC_CONFIG,
  globalTls,
  NAMESPACE,
  NAMESPACE_RETENTION,
  persistence,
  POSTGRES_MAJOR,
  SCHEMA_DIRS,
  SEARCH_ATTRIBUTES,
  SQL_PLUGIN,
  TEMPORAL_SERVER_VERSION,
  TLS_SERVER_NAME,
} from './helpers/cluster/facts';

type Service = {
  image: string;
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
  environment?: Record<string, string>;
  command?: string[];
  healthcheck?: unknown;
};
const file = fs.readFileSync(path.join(__dirname, '..', 'docker-compose.temporal.yml'), 'utf8');
const compose = parse(file, { merge: true }) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const s = compose.services;

describe('docker-compose.temporal.yml', () => {
  it('has PostgreSQL, schema setup, the server, admin tools and the UI', () => {
    expect(Object.keys(s).sort()).toEqual(['postgresql', 'temporal', 'temporal-admin-tools', 'temporal-schema-setup', 'temporal-ui']);
  });

  it('uses current images, not the deprecated auto-setup', () => {
    for (const svc of Object.values(s)) expect(svc.image).not.toContain('auto-setup');
    expect(s.temporal.image).toMatch(/^temporalio\/server:\d+\.\d+\.\d+$/);
    expect(s['temporal-ui'].image).toMatch(/^temporalio\/ui:\d+\.\d+\.\d+$/);
    expect(s['temporal-admin-tools'].image).toMatch(/^temporalio\/admin-tools:/);
    expect(s.postgresql.image).toMatch(/^postgres:\d+$/);
  });

  it('publishes the frontend on 7233 and the UI on 8080', () => {
    expect(s.temporal.ports).toContain('7233:7233');
    expect(s['temporal-ui'].ports).toContain('8080:8080');
  });

  it('starts each part only once what it needs is ready', () => {
    expect(s['temporal-schema-setup'].depends_on).toEqual({ postgresql: { condition: 'service_healthy' } });
    expect(s.temporal.depends_on).toEqual({ 'temporal-schema-setup': { condition: 'service_completed_successfully' } });
    expect(s['temporal-admin-tools'].depends_on).toEqual({ temporal: { condition: 'service_healthy' } });
    expect(s['temporal-ui'].depends_on).toEqual({ temporal: { condition: 'service_healthy' } });
    expect(s.postgresql.healthcheck).toBeDefined();
    expect(s.temporal.healthcheck).toBeDefined();
  });

  it("points the server at PostgreSQL and creates keeper's search attributes", () => {
    expect(s.temporal.environment).toMatchObject({ DB: 'postgres12', POSTGRES_SEEDS: 'postgresql' });
    const setup = (s['temporal-admin-tools'].command ?? []).join('\n');
    expect(setup).toContain('KeeperHost ServiceId');
    expect(setup).toContain('--type Keyword');
    expect(compose.volumes).toHaveProperty('temporal-postgres');
  });
});

/**
 * The compose files against the cluster the tests run (test/helpers/cluster): the same facts, read from the
 * helper's own constants and builders, not from a copy.
 */
const mtlsFile = fs.readFileSync(path.join(__dirname, '..', 'docker-compose.temporal.mtls.yml'), 'utf8');
type MtlsService = {
  entrypoint?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  configs?: { source: string; target: string }[];
};
const mtls = parse(mtlsFile, { merge: true }) as { services: Record<string, MtlsService>; configs: Record<string, { content: string }> };
const mtlsServerConfig = parse(mtls.configs['server-mtls'].content) as {
  persistence: unknown;
  global: { tls: unknown };
  dynamicConfigClient: { filepath: string };
};
const baseConfigs = (compose as unknown as { configs: Record<string, { content: string }> }).configs;
const CERTS_DIR = '/etc/temporal/certs';
/** A service's command as its shell sees it: compose turns `$$` into `$`. */
const shellOf = (svc: Service) => (svc.command ?? []).join('\n').replace(/\$\$/g, '$');
const schemaSetup = shellOf(s['temporal-schema-setup']);
const adminSetup = shellOf(s['temporal-admin-tools']);

describe("the compose files run what the tests' cluster runs", () => {
  it(`runs server ${TEMPORAL_SERVER_VERSION} (the version provisioned for the tests) and PostgreSQL ${POSTGRES_MAJOR}`, () => {
    expect(s.temporal.image).toBe(`temporalio/server:${TEMPORAL_SERVER_VERSION}`);
    expect(s['temporal-admin-tools'].image.split(':')[1]).toMatch(new RegExp(`^${TEMPORAL_SERVER_VERSION.replace(/\./g, '\\.')}(-|$)`));
    expect(s['temporal-schema-setup'].image).toBe(s['temporal-admin-tools'].image);
    expect(s.postgresql.image).toBe(`postgres:${POSTGRES_MAJOR}`);
    const script = fs.readFileSync(path.join(__dirname, '..', 'scripts', 'provision-temporal-server.sh'), 'utf8');
    expect(/^VERSION=(\S+)/m.exec(script)?.[1]).toBe(TEMPORAL_SERVER_VERSION);
  });

  it(`keeps persistence and visibility in PostgreSQL through the ${SQL_PLUGIN} plugin, schemas by temporal-sql-tool`, () => {
    expect(s.temporal.environment).toMatchObject({ DB: SQL_PLUGIN });
    const toolLines = schemaSetup.split('\n').filter((l) => l.includes('temporal-sql-tool'));
    expect(toolLines.length).toBeGreaterThan(0);
    for (const line of toolLines) expect(line).toContain(`--plugin ${SQL_PLUGIN}`);
    expect(schemaSetup).toContain(`for db in ${DATABASES.persistence} ${DATABASES.visibility}; do`);
    for (const store of ['persistence', 'visibility'] as const) {
      expect(schemaSetup).toContain(`--db ${DATABASES[store]} setup-schema -v 0.0`);
      expect(schemaSetup).toContain(
        `--db ${DATABASES[store]} update-schema -d /etc/temporal/schema/postgresql/v12/${SCHEMA_DIRS[store]}/versioned`,
      );
    }
    expect(mtlsServerConfig.persistence).toEqual(persistence({ host: 'postgresql', port: 5432, user: 'temporal', password: 'temporal' }));
  });

  it(`creates namespace ${NAMESPACE} (retention ${NAMESPACE_RETENTION}) and keeper's search attributes`, () => {
    expect(adminSetup).toContain(`namespace create -n ${NAMESPACE} --retention ${NAMESPACE_RETENTION}`);
    const names = /for sa in ([\w ]+); do/.exec(adminSetup)?.[1].split(' ') ?? [];
    const type = /search-attribute create -n \S+ --name "\$sa" --type (\w+)/.exec(adminSetup)?.[1];
    expect(Object.fromEntries(names.map((n) => [n, type]))).toEqual(SEARCH_ATTRIBUTES);
  });

  it('gives the server the same dynamic config, with or without mTLS', () => {
    expect(parse(baseConfigs.dynamicconfig.content)).toEqual(DYNAMIC_CONFIG);
    const mounted = (s.temporal as unknown as MtlsService).configs?.find((c) => c.source === 'dynamicconfig')?.target;
    expect(mtlsServerConfig.dynamicConfigClient.filepath).toBe(mounted);
  });

  it('runs the mTLS frontend and system worker exactly as the tests do, on certificates from scripts/temporal-certs.sh', () => {
    expect(mtlsServerConfig.global.tls).toEqual(globalTls(serverTlsFilesIn(CERTS_DIR)));
    const server = mtls.services.temporal;
    const configTarget = server.configs?.find((c) => c.source === 'server-mtls')?.target;
    const [, , root, , configDir, , env] = server.entrypoint ?? [];
    expect(configTarget).toBe(`${root}/${configDir}/${env}.yaml`);
    for (const svc of ['temporal', 'temporal-admin-tools', 'temporal-ui']) {
      expect(mtls.services[svc].volumes?.[0]).toMatch(new RegExp(`:${CERTS_DIR}:ro$`));
    }
  });

  it('gives the admin tools and the UI a client certificate and the server name the certificate carries', () => {
    const flags = mtls.services['temporal-admin-tools'].environment?.TEMPORAL_CLI_TLS_FLAGS ?? '';
    expect(flags.split(/\s+/)).toEqual([
      '--tls',
      '--tls-cert-path',
      `${CERTS_DIR}/admin.pem`,
      '--tls-key-path',
      `${CERTS_DIR}/admin.key`,
      '--tls-ca-path',
      `${CERTS_DIR}/ca.pem`,
      '--tls-server-name',
      TLS_SERVER_NAME,
    ]);
    expect(adminSetup.match(/\$tls/g)?.length).toBe(3); // every temporal command of the setup gets the flags
    expect(mtls.services['temporal-ui'].environment).toMatchObject({
      TEMPORAL_TLS_CA: `${CERTS_DIR}/ca.pem`,
      TEMPORAL_TLS_CERT: `${CERTS_DIR}/admin.pem`,
      TEMPORAL_TLS_SERVER_NAME: TLS_SERVER_NAME,
    });
  });
});
