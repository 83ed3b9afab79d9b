/**
 * A real Temporal cluster for tests: PostgreSQL 15 of the suite's own, the schemas made by temporal-sql-tool,
 * temporal-server 1.29.1 whose frontend requires client certificates (mTLS), namespace `default` and keeper's
 * search attributes — what an operator runs in production (docker-compose.temporal.mtls.yml), on loopback
 * ports, in one temp dir. No vitest imports.
 *
 *   const cluster = await startCluster();     // 3-8 s on a 2-core machine
 *   Connection.connect({ address: cluster.address, tls: … cluster.tls … });
 *   await cluster.killServer(); await cluster.startServer();   // a crash and a restart over the same DB
 *   await cluster.stop();                     // server, PostgreSQL, temp dir
 *
 * Every process inherits the environment, so it carries the suite's run tag (KEEPER_TEST_RUN). If the start
 * fails half-way, what was started is stopped before the error (one line, with the tail of the log) is thrown.
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { TLSConfig } from '@temporalio/client';
import { tempDir } from '../fixtures';
import { makeCertificates, type ClientTlsFiles, type ClusterCertificates } from './certs';
import {
  clusterCli,
  cliTlsArgs,
  createNamespaceAndSearchAttributes,
  frontendServing,
  waitForNamespaceQueries,
  type ClusterCli,
} from './cli';
import { NAMESPACE, TLS_SERVER_NAME } from './facts';
import { initPostgres, startPostgres } from './postgres';
import { settleAll } from './run';
import { sdkTls } from './sdk-tls';
import { setupSchemas } from './schema';
import { writeServerConfig } from './server-config';
import { serverProcess, type ServerProcess } from './server';
import { clusterTools } from './tools';

export * from './facts';
export { SEARCH_ATTRIBUTE_QUERY } from './cli';
export { sdkTls } from './sdk-tls';
export { serverTlsFilesIn } from './certs';
export type { ClientTlsFiles } from './certs';

export interface ClusterTimingsMs {
  certificates?: number;
  initdb?: number;
  pgStart?: number;
  schema?: number;
  /** From spawning temporal-server until its frontend's health service says SERVING. */
  serverReady?: number;
  /** Namespace and search attributes created, until SQL visibility accepts a query on them. */
  namespaceReady?: number;
  total?: number;
  /** The last startServer(): spawn until the namespace answers queries again. */
  restart?: number;
  stop?: number;
}

export interface TemporalCluster {
  /** The frontend, host:port on 127.0.0.1. */
  address: string;
  namespace: string;
  /** The temp dir holding PostgreSQL's data, the certificates, the server's config and logs. */
  dir: string;
  /** keeper's side of mTLS: the CA that signed the server's certificate, and keeper's client certificate. */
  tls: ClientTlsFiles & { serverName: string };
  /** A client certificate (and its CA) that the server does not trust. */
  untrusted: ClientTlsFiles;
  /** `--tls --tls-cert-path … --tls-key-path … --tls-ca-path … --tls-server-name …` for the temporal CLI. */
  cliTlsArgs(): string[];
  /** keeper's TLS options for the SDK's Connection.connect and NativeConnection.connect. */
  sdkTls(): TLSConfig;
  /** The temporal CLI with --address and keeper's TLS flags added. */
  cli: ClusterCli;
  logs: { server: string; postgres: string };
  timingsMs: ClusterTimingsMs;
  /** SIGKILLs the server process (PostgreSQL keeps running). */
  killServer(): Promise<void>;
  /** Starts the server again (same config, ports and DB); resolves once the namespace answers queries. */
  startServer(): Promise<void>;
  /** Stops the server and PostgreSQL, waits for them to exit, removes the temp dir. Safe to call twice. */
  stop(): Promise<void>;
}

export interface StartClusterOptions {
  /** Bound on the server's start until it serves (default 180 s, generous: it serves in under 1 s here). */
  serverStartTimeoutMs?: number;
  /** Bound on namespace + search attributes until visibility accepts a query (default 90 s). */
  namespaceTimeoutMs?: number;
  /** Serve the server's Prometheus metrics on 127.0.0.1:PORT (default: none). */
  metricsPort?: number;
  /** Where the cluster's temp dir is made (default: the system's temp dir). */
  parentDir?: string;
}

async function timed<T>(timings: ClusterTimingsMs, key: keyof ClusterTimingsMs, step: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await step();
  } finally {
    timings[key] = Math.round(performance.now() - started);
  }
}

/** Undo steps, run last-first; errors are collected, so one failed step never leaves the rest running. */
class Teardown {
  private steps: { what: string; undo: () => Promise<void> }[] = [];
  push(what: string, undo: () => Promise<void>): void {
    this.steps.push({ what, undo });
  }
  async run(): Promise<string[]> {
    const errors: string[] = [];
    for (const { what, undo } of this.steps.splice(0).reverse()) {
      await undo().catch((err: Error) => errors.push(`${what}: ${err.message}`));
    }
    return errors;
  }
}

/** Starts a cluster; on any failure, stops what it started and throws one line naming the failed step. */
export async function startCluster(opts: StartClusterOptions = {}): Promise<TemporalCluster> {
  const teardown = new Teardown();
  try {
    return await startClusterSteps(opts, teardown);
  } catch (err) {
    const leftovers = await teardown.run();
    const note = leftovers.length ? `; cleanup also failed: ${leftovers.join('; ')}` : '';
    throw new Error(`startCluster: ${(err as Error).message}${note}`);
  }
}

async function startClusterSteps(opts: StartClusterOptions, teardown: Teardown): Promise<TemporalCluster> {
  const tools = clusterTools();
  const timingsMs: ClusterTimingsMs = {};
  const started = performance.now();
  const dir = tempDir('keeper-cluster-', opts.parentDir);
  teardown.push('remove temp dir', async () => fs.rmSync(dir, { recursive: true, force: true }));
  fs.chmodSync(dir, 0o711); // the postgres user must reach its own directory inside
  const [certs, pgPaths] = await settleAll([
    timed(timingsMs, 'certificates', () => makeCertificates(path.join(dir, 'tls'))),
    timed(timingsMs, 'initdb', () => initPostgres(path.join(dir, 'pg'), tools.initdb)),
  ]);
  const pg = await timed(timingsMs, 'pgStart', () => startPostgres(pgPaths, tools.pgCtl));
  teardown.push('stop PostgreSQL', () => pg.stop());
  await timed(timingsMs, 'schema', () => setupSchemas(tools.sqlTool, tools.schemaDir, pg.sql));

  const serverDir = path.join(dir, 'server');
  const { address } = await writeServerConfig(serverDir, pg.sql, certs.server, opts.metricsPort);
  const server = serverProcess(tools.server, serverDir);
  teardown.push('stop temporal-server', () => server.stop());
  const cli = clusterCli(tools.cli, address, certs.keeper);
  const bounds = { serverMs: opts.serverStartTimeoutMs ?? 180_000, namespaceMs: opts.namespaceTimeoutMs ?? 90_000 };
  await timed(timingsMs, 'serverReady', () => server.start(() => frontendServing(cli), bounds.serverMs));
  await timed(timingsMs, 'namespaceReady', async () => {
    await createNamespaceAndSearchAttributes(cli, bounds.namespaceMs);
    await waitForNamespaceQueries(cli, bounds.namespaceMs);
  });
  timingsMs.total = Math.round(performance.now() - started);
  return clusterHandle({ address, dir, certs, cli, server, pgLog: pg.logFile, timingsMs, teardown, bounds });
}

interface HandleParts {
  address: string;
  dir: string;
  certs: ClusterCertificates;
  cli: ClusterCli;
  server: ServerProcess;
  pgLog: string;
  timingsMs: ClusterTimingsMs;
  teardown: Teardown;
  bounds: { serverMs: number; namespaceMs: number };
}

function clusterHandle(p: HandleParts): TemporalCluster {
  const { certs, cli, server, timingsMs } = p;
  return {
    address: p.address,
    namespace: NAMESPACE,
    dir: p.dir,
    tls: { ...certs.keeper, serverName: TLS_SERVER_NAME },
    untrusted: certs.untrusted,
    cliTlsArgs: () => cliTlsArgs(certs.keeper),
    sdkTls: () => sdkTls(certs.keeper.caFile, certs.keeper),
    cli,
    logs: { server: server.logFile, postgres: p.pgLog },
    timingsMs,
    killServer: () => server.kill(),
    startServer: () =>
      timed(timingsMs, 'restart', async () => {
        await server.start(() => frontendServing(cli), p.bounds.serverMs);
        await waitForNamespaceQueries(cli, p.bounds.namespaceMs);
      }),
    stop: () =>
      timed(timingsMs, 'stop', async () => {
        const errors = await p.teardown.run();
        if (errors.length) throw new Error(`cluster stop: ${errors.join('; ')}`);
      }),
  };
}
