/**
 * The temporal CLI against the cluster, with keeper's client certificate: the health probe, the namespace and
 * search attributes an operator creates (as docker-compose.temporal.yml's admin tools do), and the wait until
 * SQL visibility accepts queries on them. No vitest imports.
 */
import type { ClientTlsFiles } from './certs';
import { NAMESPACE, NAMESPACE_RETENTION, SEARCH_ATTRIBUTES, TLS_SERVER_NAME } from './facts';
import { run } from './run';
import { waitFor } from '../fixtures';

/** The CLI's TLS flags for a client with `files`. */
export function cliTlsArgs(files: ClientTlsFiles): string[] {
  return [
    '--tls',
    '--tls-cert-path',
    files.clientCertFile,
    '--tls-key-path',
    files.clientKeyFile,
    '--tls-ca-path',
    files.caFile,
    '--tls-server-name',
    TLS_SERVER_NAME,
  ];
}

export interface CliRunOptions {
  timeoutMs?: number;
  /** TLS flags in place of keeper's (e.g. another client's, or none at all). */
  tlsArgs?: string[];
}

export interface ClusterCli {
  /** Runs `temporal ARGS --address … <keeper's TLS flags>`; resolves with stdout, rejects with one line. */
  run(args: string[], opts?: CliRunOptions): Promise<string>;
}

export function clusterCli(binary: string, address: string, tls: ClientTlsFiles): ClusterCli {
  return {
    run: (args, { timeoutMs = 30_000, tlsArgs = cliTlsArgs(tls) } = {}) =>
      run(`temporal ${args.slice(0, 3).join(' ')}`, binary, [...args, '--address', address, ...tlsArgs], { timeoutMs }),
  };
}

/** The frontend's gRPC health service says SERVING. */
export async function frontendServing(cli: ClusterCli): Promise<boolean> {
  return /SERVING/.test(await cli.run(['operator', 'cluster', 'health'], { timeoutMs: 10_000 }));
}

/** A query on every keeper search attribute (all Keyword), e.g. KeeperHost="x" AND ServiceId="x". */
export const SEARCH_ATTRIBUTE_QUERY = Object.keys(SEARCH_ATTRIBUTES)
  .map((name) => `${name}="x"`)
  .join(' AND ');

/** Creates the namespace (retried while the server's history service is still joining) and the search attributes. */
export async function createNamespaceAndSearchAttributes(cli: ClusterCli, timeoutMs: number): Promise<void> {
  await waitFor(
    `namespace ${NAMESPACE} to be created`,
    async () => {
      await cli
        .run(['operator', 'namespace', 'create', '--namespace', NAMESPACE, '--retention', NAMESPACE_RETENTION])
        .catch((err: Error) => {
          if (!/already exists|AlreadyExists/i.test(err.message)) throw err;
        });
      return true;
    },
    timeoutMs,
    500,
  );
  // One --type per --name: given one --type for two names, CLI 1.5.1 pairs them by index and silently creates
  // only the first attribute.
  const pairs = Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--name', name, '--type', type]);
  await cli.run(['operator', 'search-attribute', 'create', '--namespace', NAMESPACE, ...pairs]);
}

/**
 * Waits until the namespace is described and SQL visibility accepts a query on keeper's search attributes:
 * right after they are created, visibility still calls them "not a valid search attribute" for some seconds.
 */
export async function waitForNamespaceQueries(cli: ClusterCli, timeoutMs: number): Promise<void> {
  await waitFor(
    `namespace ${NAMESPACE} and a visibility query ${SEARCH_ATTRIBUTE_QUERY}`,
    async () => {
      await cli.run(['operator', 'namespace', 'describe', '--namespace', NAMESPACE]);
      await cli.run(['workflow', 'list', '--namespace', NAMESPACE, '--query', SEARCH_ATTRIBUTE_QUERY, '--limit', '1']);
      return true;
    },
    timeoutMs,
    500,
  );
}
