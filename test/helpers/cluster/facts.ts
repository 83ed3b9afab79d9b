/**
 * What the tests' Temporal cluster runs, in one place: the server version, PostgreSQL, the persistence and
 * visibility stores, the namespace, keeper's search attributes, the dynamic config and the TLS layout.
 * test/compose.test.ts compares docker-compose.temporal.yml and its mTLS variant with these, so an operator's
 * cluster and the one the tests prove keeper on cannot drift apart. No vitest imports.
 */
import { cliTypeName, KEEPER_SEARCH_ATTRIBUTES } from '../../../src/search-attributes';

/** scripts/provision-temporal-server.sh builds this version (its VERSION line; test/compose.test.ts compares). */
export const TEMPORAL_SERVER_VERSION = '1.29.1';
/** Debian's PostgreSQL major version, whose initdb/pg_ctl the helper runs; the compose file's image tag. */
export const POSTGRES_MAJOR = 15;
/** temporal-sql-tool's and the server's SQL plugin for PostgreSQL ≥ 12, for persistence and visibility alike. */
export const SQL_PLUGIN = 'postgres12';
export const DATABASES = { persistence: 'temporal', visibility: 'temporal_visibility' } as const;
/** The directories below the server module's schema/postgresql/v12 that update-schema applies. */
export const SCHEMA_DIRS = { persistence: 'temporal', visibility: 'visibility' } as const;
export const NAMESPACE = 'default';
export const NAMESPACE_RETENTION = '24h';
export const SEARCH_ATTRIBUTES: Record<string, string> = Object.fromEntries(KEEPER_SEARCH_ATTRIBUTES.map((k) => [k.name, cliTypeName(k)]));
/** The name the frontend's certificate carries and clients verify (its SANs: DNS:localhost, IP:127.0.0.1). */
export const TLS_SERVER_NAME = 'localhost';
/** IDs are varchar(255) in the SQL schemas: longer ones are refused at the API instead of failing in the DB. */
export const DYNAMIC_CONFIG = { 'limit.maxIDLength': [{ value: 255 }] };

/** The files global.tls names: those scripts/temporal-certs.sh writes. */
export interface ServerTlsFiles {
  caFile: string;
  serverCertFile: string;
  serverKeyFile: string;
  systemWorkerCertFile: string;
  systemWorkerKeyFile: string;
}

/**
 * The server's global.tls: the frontend requires a client certificate signed by the CA; the server's own
 * system worker presents a client certificate of its own (without `systemWorker`, it would fall back to the
 * internode settings, which carry no client certificate here, and the frontend would refuse it).
 */
export function globalTls(files: ServerTlsFiles) {
  const client = { serverName: TLS_SERVER_NAME, rootCaFiles: [files.caFile] };
  return {
    frontend: {
      server: {
        certFile: files.serverCertFile,
        keyFile: files.serverKeyFile,
        requireClientAuth: true,
        clientCaFiles: [files.caFile],
      },
      client,
    },
    systemWorker: { certFile: files.systemWorkerCertFile, keyFile: files.systemWorkerKeyFile, client },
  };
}

export interface SqlEndpoint {
  host: string;
  port: number;
  user: string;
  password: string;
}

/** The persistence section: one PostgreSQL, the default store in `temporal`, SQL visibility in `temporal_visibility`. */
export function persistence(sql: SqlEndpoint) {
  const store = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: SQL_PLUGIN,
      databaseName,
      connectAddr: `${sql.host}:${sql.port}`,
      connectProtocol: 'tcp',
      user: sql.user,
      password: sql.password,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  return {
    defaultStore: 'postgres-default',
    visibilityStore: 'postgres-visibility',
    numHistoryShards: 4,
    datastores: {
      'postgres-default': store(DATABASES.persistence, 20),
      'postgres-visibility': store(DATABASES.visibility, 2),
    },
  };
}
