/**
 * The tests' real Temporal cluster (test/helpers/cluster): PostgreSQL, temporal-server 1.29.1 with an mTLS
 * frontend, namespace `default` and keeper's search attributes. These prove the cluster is what later tests
 * rely on: keeper's clients get in with keeper's certificate and nobody gets in without one, the server's own
 * system worker runs schedules through mTLS, and everything survives a server crash in PostgreSQL.
 */
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { NativeConnection } from '@temporalio/worker';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeeperHost } from '../../src/search-attributes';
import { tempDir, uniqueId, waitFor } from '../helpers/fixtures';
import { processesMarked } from '../helpers/host-state';
import { SEARCH_ATTRIBUTES, sdkTls, startCluster, TEMPORAL_SERVER_VERSION, type TemporalCluster } from '../helpers/cluster';

let cluster: TemporalCluster;

beforeAll(async () => {
  cluster = await startCluster();
  console.log(`cluster started: ${JSON.stringify(cluster.timingsMs)}`);
}, 300_000);

afterAll(async () => {
  await cluster?.stop();
  console.log(`cluster stopped in ${cluster?.timingsMs.stop} ms`);
}, 60_000);

/** Runs `use` on a client connection with keeper's certificate, closing it afterwards. */
async function withKeeperClient<T>(use: (connection: Connection, client: Client) => Promise<T>): Promise<T> {
  const connection = await Connection.connect({ address: cluster.address, tls: cluster.sdkTls() });
  try {
    return await use(connection, new Client({ connection, namespace: cluster.namespace }));
  } finally {
    await connection.close();
  }
}

const indexedValueType = (type: string) =>
  temporal.api.enums.v1.IndexedValueType[`INDEXED_VALUE_TYPE_${type.toUpperCase()}` as keyof typeof temporal.api.enums.v1.IndexedValueType];

async function expectNamespaceAndSearchAttributes(connection: Connection): Promise<void> {
  const { namespaceInfo, config } = await connection.workflowService.describeNamespace({ namespace: cluster.namespace });
  expect(namespaceInfo?.name).toBe('default');
  expect(Number(config?.workflowExecutionRetentionTtl?.seconds)).toBe(24 * 3600);
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace: cluster.namespace });
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) expect(customAttributes?.[name], name).toBe(indexedValueType(type));
}

/** Starts a workflow nobody works on, tagged with KeeperHost `host`: it stays open, visible to queries. */
async function startIdleWorkflow(client: Client, host: string): Promise<string> {
  const workflowId = uniqueId('idle-');
  await client.workflow.start('idle', {
    workflowId,
    taskQueue: uniqueId('nobody-'),
    typedSearchAttributes: [{ key: KeeperHost, value: host }],
  });
  return workflowId;
}

describe('a real Temporal cluster with PostgreSQL and mTLS', () => {
  it("lets keeper's client in: server 1.29.1, namespace default, keeper's search attributes", async () => {
    await withKeeperClient(async (connection) => {
      const info = await connection.workflowService.getSystemInfo({});
      expect(info.serverVersion).toBe(TEMPORAL_SERVER_VERSION);
      await expectNamespaceAndSearchAttributes(connection);
    });
  });

  it('answers the temporal CLI with its TLS flags: workflow list by KeeperHost finds the tagged workflow', async () => {
    const host = uniqueId('host-');
    const workflowId = await withKeeperClient((_c, client) => startIdleWorkflow(client, host));
    expect(cluster.cliTlsArgs()).toEqual(
      expect.arrayContaining(['--tls-cert-path', '--tls-key-path', '--tls-ca-path', '--tls-server-name']),
    );
    const listed = await waitFor('the CLI to list the workflow by KeeperHost', async () => {
      const out = await cluster.cli.run(['workflow', 'list', '--query', `KeeperHost="${host}"`, '--output', 'json']);
      return out.includes(workflowId) && out;
    });
    expect(JSON.parse(listed)).toHaveLength(1);
    expect(await cluster.cli.run(['workflow', 'list', '--query', 'KeeperHost="x"', '--output', 'json'])).not.toContain(workflowId);
  });

  it("runs schedules: the server's system worker connects through mTLS with its own certificate", async () => {
    await withKeeperClient(async (_c, client) => {
      const handle = await client.schedule.create({
        scheduleId: uniqueId('schedule-'),
        spec: { intervals: [{ every: '1s' }] },
        action: { type: 'startWorkflow', workflowType: 'idle', taskQueue: uniqueId('nobody-') },
      });
      try {
        const described = await waitFor(
          'the schedule to take an action',
          async () => {
            const d = await handle.describe();
            return d.info.recentActions.length > 0 && d;
          },
          30_000,
          250,
        );
        expect(described.info.recentActions[0].action.type).toBe('startWorkflow');
      } finally {
        await handle.delete();
      }
    });
  });
});

/**
 * How the worker's connection (Rust core) reports a refusal. With TLS 1.3 the client has finished its handshake
 * before the server checks the client's certificate, so the server's alert arrives with the first request, or
 * the server is found to have hung up first (closed, broken pipe, reset: over 150 tries each, both kinds showed
 * up for every case).
 */
const NATIVE_CLOSED = String.raw`hyper::Error\(Canceled, "connection closed"\)|kind: BrokenPipe|Kind\(ConnectionReset\)`;
const nativeRefusal = (alert: string) => new RegExp(`received fatal alert: ${alert}|${NATIVE_CLOSED}`);

describe('refusals: no certificate of the trusted CA, no entry', () => {
  /** Trusts the server's CA, but presents a client certificate that another CA signed. */
  const untrustedTls = () => sdkTls(cluster.tls.caFile, cluster.untrusted);
  const noClientCertTls = () => sdkTls(cluster.tls.caFile);

  it("refuses the worker's connection (NativeConnection): untrusted certificate, no certificate, no TLS", async () => {
    const address = cluster.address;
    await expect(NativeConnection.connect({ address, tls: untrustedTls() })).rejects.toThrow(nativeRefusal('UnknownCA'));
    await expect(NativeConnection.connect({ address, tls: noClientCertTls() })).rejects.toThrow(nativeRefusal('CertificateRequired'));
    await expect(NativeConnection.connect({ address })).rejects.toThrow(new RegExp(NATIVE_CLOSED));
    const admitted = await NativeConnection.connect({ address, tls: cluster.sdkTls() });
    await admitted.close();
  });

  it("refuses the client's connection (Connection): it never gets ready, while keeper's certificate does", async () => {
    const attempt = async (tls?: ReturnType<typeof sdkTls>) => {
      // lazy + ensureConnected, so that a refused channel is closed rather than left retrying in the background.
      const connection = Connection.lazy({ address: cluster.address, tls, connectTimeout: 3_000 });
      try {
        await connection.ensureConnected();
      } finally {
        await connection.close();
      }
    };
    await expect(attempt(untrustedTls())).rejects.toThrow('Failed to connect before the deadline');
    await expect(attempt(undefined)).rejects.toThrow('Failed to connect before the deadline');
    await expect(attempt(cluster.sdkTls())).resolves.toBeUndefined();
  });

  it('refuses the temporal CLI with an untrusted certificate or without TLS', async () => {
    const untrustedArgs = [
      '--tls',
      '--tls-cert-path',
      cluster.untrusted.clientCertFile,
      '--tls-key-path',
      cluster.untrusted.clientKeyFile,
      '--tls-ca-path',
      cluster.tls.caFile,
      '--tls-server-name',
      cluster.tls.serverName,
    ];
    const list = ['workflow', 'list', '--limit', '1'];
    // Go's TLS client sends no certificate that the server's list of acceptable CAs does not cover; as above, the
    // server's alert or the closed connection may come first.
    await expect(cluster.cli.run(list, { tlsArgs: untrustedArgs })).rejects.toThrow(
      /remote error: tls: certificate required|write: (broken pipe|connection reset by peer)/,
    );
    // A plaintext HTTP/2 preface: the server's TLS listener closes the connection, found as EOF or as a reset.
    await expect(cluster.cli.run(list, { tlsArgs: [] })).rejects.toThrow(
      /error reading server preface: (EOF|read tcp .* connection reset by peer)/,
    );
    await expect(cluster.cli.run(list)).resolves.toBeDefined();
  });
});

describe('a server crash', () => {
  it('keeps the namespace, the search attributes and open workflows in PostgreSQL', async () => {
    const workflowId = await withKeeperClient((_c, client) => startIdleWorkflow(client, uniqueId('host-')));
    await cluster.killServer();
    await expect(cluster.cli.run(['operator', 'cluster', 'health'], { timeoutMs: 10_000 })).rejects.toThrow(/connection refused/);
    await cluster.startServer();
    console.log(`server restarted in ${cluster.timingsMs.restart} ms`);
    await withKeeperClient(async (connection, client) => {
      await expectNamespaceAndSearchAttributes(connection);
      expect((await client.workflow.getHandle(workflowId).describe()).status.name).toBe('RUNNING');
    });
  }, 240_000);
});

describe('a start that fails half-way', () => {
  // Files run side by side, starting clusters of their own: this start is given a parent dir of its own, and its
  // processes carry a mark of its own in their environment (children inherit it, PostgreSQL's daemon too).
  const START_MARK = 'KEEPER_TEST_FAILED_START';

  it('stops what it started, removes its temp dir, and says in one line what failed', async () => {
    const parentDir = tempDir('keeper-failed-start-');
    fs.chmodSync(parentDir, 0o711); // the postgres user must reach the cluster's directory inside
    const mark = uniqueId();
    process.env[START_MARK] = mark;
    try {
      const failed = startCluster({ serverStartTimeoutMs: 1, parentDir });
      await expect(failed).rejects.toThrow(/^startCluster: temporal-server did not serve within 1 ms; \S+server\.log: /);
      await expect(failed).rejects.toThrow(/^[^\n]*$/);
    } finally {
      delete process.env[START_MARK];
    }
    expect(fs.readdirSync(parentDir)).toEqual([]);
    expect(processesMarked(START_MARK, mark)).toEqual([]);
  }, 120_000);
});
