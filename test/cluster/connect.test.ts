/**
 * keeper connects to a real, secured Temporal cluster (temporal-server 1.29.1 on PostgreSQL, mTLS frontend) as
 * Temporal's own tools do: the TEMPORAL_* variables or a temporal.toml profile. Settings that cannot work stop
 * it at start with one line naming them (exit 2); a server that does not answer or refuses the handshake stops
 * it with one line saying which (exit 1). An API key goes out as `authorization: Bearer …` over TLS. One-shot
 * commands run through the host's worker when one polls its queue, and through a worker of their own otherwise.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openStateDb } from '../../src/db/open';
import { DockerClient } from '../../src/docker/client';
import { freePort } from '../../src/temporal/dev-server';
import { keeper } from '../helpers/cli';
import { serverTlsFilesIn, startCluster, type TemporalCluster } from '../helpers/cluster';
import { startClusterHost, temporalTlsEnv } from '../helpers/cluster/keeper';
import { tempDir, testSettings, uniqueId } from '../helpers/fixtures';
import { startGrpcCapture } from '../helpers/grpc-capture';
import { captureLog } from '../helpers/log';
import { quietRuntime } from '../helpers/temporal';

let cluster: TemporalCluster;
let dir: string;

beforeAll(async () => {
  quietRuntime();
  cluster = await startCluster();
  dir = tempDir('keeper-connect-');
}, 300_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

/** `keeper <args> --db <a fresh DB> --host-id <a fresh host>` with `env`; the DB made as the host's worker would. */
async function keeperOnCluster(args: string[], env: Record<string, string>) {
  const hostId = uniqueId('c-');
  openStateDb(path.join(dir, `${hostId}.db`)).close();
  const r = await keeper([...args, '--db', path.join(dir, `${hostId}.db`), '--host-id', hostId], env, 90_000);
  return { ...r, hostId };
}

describe('keeper on a real cluster with an mTLS frontend', () => {
  it('connects with the TEMPORAL_* variables; with no worker on its queue, a one-shot command runs its own and says so', async () => {
    const r = await keeperOnCluster(['health', '--json'], temporalTlsEnv(cluster));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.engine.reachable).toBe(true);
    expect(out.run).toMatchObject({
      ranBy: 'this command',
      why: `no worker polls keeper-${r.hostId}`,
      server: `${cluster.address}, namespace default, TLS on, auth mTLS`,
    });
  });

  it('connects with a temporal.toml profile chosen by --temporal-profile', async () => {
    const toml = path.join(dir, 'temporal.toml');
    fs.writeFileSync(
      toml,
      [
        '[profile.prod]',
        `address = "${cluster.address}"`,
        'namespace = "default"',
        '[profile.prod.tls]',
        `client_cert_path = "${cluster.tls.clientCertFile}"`,
        `client_key_path = "${cluster.tls.clientKeyFile}"`,
        `server_ca_cert_path = "${cluster.tls.caFile}"`,
        `server_name = "${cluster.tls.serverName}"`,
      ].join('\n'),
    );
    const r = await keeperOnCluster(['health', '--json', '--temporal-profile', 'prod'], { TEMPORAL_CONFIG_FILE: toml });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).run.server).toBe(`${cluster.address}, namespace default, TLS on, auth mTLS, profile prod`);
  });

  it('stops at start with one line naming a setting that cannot work (exit 2)', async () => {
    const env = temporalTlsEnv(cluster);
    const missing = await keeperOnCluster(['health'], { ...env, TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(dir, 'nope.pem') });
    expect(missing).toMatchObject({
      code: 2,
      stdout: '',
      stderr: `keeper: TEMPORAL_TLS_CLIENT_CERT_PATH: ${path.join(dir, 'nope.pem')} does not exist\n`,
    });
    const mismatched = await keeperOnCluster(['health'], { ...env, TEMPORAL_TLS_CLIENT_KEY_PATH: cluster.untrusted.clientKeyFile });
    expect(mismatched).toMatchObject({
      code: 2,
      stderr: 'keeper: the TLS client key (TEMPORAL_TLS_CLIENT_KEY_PATH) does not match its certificate\n',
    });
    const toml = path.join(dir, 'empty.toml');
    fs.writeFileSync(toml, '[profile.default]\n');
    const unknown = await keeperOnCluster(['health', '--temporal-profile', 'staging'], { TEMPORAL_CONFIG_FILE: toml });
    expect(unknown).toMatchObject({ code: 2, stderr: `keeper: unknown Temporal profile "staging" in ${toml}\n` });
  });

  it('stops with one line saying which when the server does not answer or refuses the handshake (exit 1)', async () => {
    const untrusted = await keeperOnCluster(['health'], temporalTlsEnv(cluster, cluster.untrusted));
    expect(untrusted.code).toBe(1);
    expect(untrusted.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        new RegExp(
          `^keeper: Temporal at ${cluster.address} refused the TLS handshake \\(auth mtls\\): .*(unknown ca|certificate|alert)`,
          'i',
        ),
      ),
    ]);
    const plaintext = await keeperOnCluster(['health'], { TEMPORAL_ADDRESS: cluster.address });
    expect(plaintext.code).toBe(1);
    expect(plaintext.stderr).toMatch(
      new RegExp(`^keeper: Temporal at ${cluster.address} accepts connections but not keeper's plaintext gRPC .*set TEMPORAL_TLS=true`),
    );
    console.log(`refusals as an operator reads them:\n${untrusted.stderr}${plaintext.stderr}`);
    const nobody = `127.0.0.1:${await freePort()}`;
    const down = await keeperOnCluster(['health'], { ...temporalTlsEnv(cluster), TEMPORAL_ADDRESS: nobody });
    expect(down).toMatchObject({ code: 1, stderr: `keeper: no Temporal server answers at ${nobody}: connection refused\n` });
  });

  it('with TEMPORAL_API_KEY sends `authorization: Bearer <key>` over TLS, and never shows the key', async () => {
    const server = serverTlsFilesIn(path.dirname(cluster.tls.caFile));
    const capture = await startGrpcCapture({
      upstream: cluster.address,
      serverCertFile: server.serverCertFile,
      serverKeyFile: server.serverKeyFile,
      caFile: cluster.tls.caFile,
      clientCertFile: cluster.tls.clientCertFile,
      clientKeyFile: cluster.tls.clientKeyFile,
      serverName: cluster.tls.serverName,
    });
    try {
      const key = `key-${uniqueId('')}`;
      const r = await keeperOnCluster(['health', '--json'], {
        TEMPORAL_ADDRESS: capture.address,
        TEMPORAL_API_KEY: key,
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: cluster.tls.caFile,
        TEMPORAL_TLS_SERVER_NAME: cluster.tls.serverName,
      });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).run.server).toBe(`${capture.address}, namespace default, TLS on, auth API key`);
      expect(r.stdout + r.stderr).not.toContain(key);
      const calls = capture.requests.filter((q) => q.path.startsWith('/temporal.api.workflowservice.v1.WorkflowService/'));
      expect(calls.length).toBeGreaterThan(0);
      for (const call of calls) expect(call.headers.authorization).toBe(`Bearer ${key}`);

      // The same key from --temporal-api-key-file, as an editor saves it (a trailing newline): out of `ps`, same header.
      const keyFile = path.join(dir, 'api-key');
      fs.writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
      const before = capture.requests.length;
      const fromFile = await keeperOnCluster(['health', '--json', '--temporal-api-key-file', keyFile], {
        TEMPORAL_ADDRESS: capture.address,
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: cluster.tls.caFile,
        TEMPORAL_TLS_SERVER_NAME: cluster.tls.serverName,
      });
      expect(fromFile.code, fromFile.stderr).toBe(0);
      expect(JSON.parse(fromFile.stdout).run.server).toBe(`${capture.address}, namespace default, TLS on, auth API key`);
      const fileCalls = capture.requests
        .slice(before)
        .filter((q) => q.path.startsWith('/temporal.api.workflowservice.v1.WorkflowService/'));
      expect(fileCalls.length).toBeGreaterThan(0);
      for (const call of fileCalls) expect(call.headers.authorization).toBe(`Bearer ${key}`);
    } finally {
      await capture.close();
    }
  });

  it("runs a one-shot command through the host's worker when one polls its queue", async () => {
    const hostId = uniqueId('c-');
    const db = openStateDb(path.join(dir, `${hostId}.db`));
    const settings = testSettings({ hostId, db: db.name });
    const host = await startClusterHost(
      settings,
      { db, docker: new DockerClient(), log: captureLog().log },
      temporalTlsEnv(cluster),
      inject('workflowBundlePath'),
    );
    try {
      const r = await keeper(['reconcile', '--once', '--json', '--db', db.name, '--host-id', hostId], temporalTlsEnv(cluster), 90_000);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).run).toMatchObject({
        ranBy: 'host worker',
        server: `${cluster.address}, namespace default, TLS on, auth mTLS`,
      });
    } finally {
      await host.stop();
      db.close();
    }
  });
});
