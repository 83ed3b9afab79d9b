/**
 * The cluster's certificates, made by scripts/temporal-certs.sh (the script operators run for the compose mTLS
 * variant): one PKI the server trusts, and a second, untrusted one whose client certificate it must refuse.
 * No vitest imports.
 */
import path from 'node:path';
import type { ServerTlsFiles } from './facts';
import { run, settleAll } from './run';
import { CERTS_SCRIPT } from './tools';

export interface ClientTlsFiles {
  caFile: string;
  clientCertFile: string;
  clientKeyFile: string;
}

export interface ClusterCertificates {
  server: ServerTlsFiles;
  /** keeper's client certificate, signed by the CA the server trusts. */
  keeper: ClientTlsFiles;
  /** A client certificate signed by another CA: the server must refuse it. */
  untrusted: ClientTlsFiles;
}

async function makePki(dir: string): Promise<void> {
  await run('scripts/temporal-certs.sh', 'bash', [CERTS_SCRIPT, dir], { timeoutMs: 30_000, env: { KEEPER_CERT_DAYS: '2' } });
}

/** The server's files in a directory scripts/temporal-certs.sh wrote (the compose mTLS variant mounts one too). */
export const serverTlsFilesIn = (dir: string): ServerTlsFiles => ({
  caFile: path.join(dir, 'ca.pem'),
  serverCertFile: path.join(dir, 'server.pem'),
  serverKeyFile: path.join(dir, 'server.key'),
  systemWorkerCertFile: path.join(dir, 'system-worker.pem'),
  systemWorkerKeyFile: path.join(dir, 'system-worker.key'),
});

/** keeper's client files in such a directory. */
const keeperFilesIn = (dir: string): ClientTlsFiles => ({
  caFile: path.join(dir, 'ca.pem'),
  clientCertFile: path.join(dir, 'keeper.pem'),
  clientKeyFile: path.join(dir, 'keeper.key'),
});

/** Makes both PKIs below `dir` (`dir/trusted`, `dir/untrusted`). */
export async function makeCertificates(dir: string): Promise<ClusterCertificates> {
  const trusted = path.join(dir, 'trusted');
  const untrusted = path.join(dir, 'untrusted');
  await settleAll([makePki(trusted), makePki(untrusted)]);
  return { server: serverTlsFilesIn(trusted), keeper: keeperFilesIn(trusted), untrusted: keeperFilesIn(untrusted) };
}
