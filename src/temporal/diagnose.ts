/**
 * Why a connection to Temporal failed, in one line an operator can act on. The gRPC clients say little (the
 * client library only that no connection came up before its deadline), so after a failure keeper asks the
 * network itself: does anything listen at the address, and if so, what does a TLS handshake with keeper's own
 * TLS settings say (an unknown CA, a certificate the server requires), or does it expect TLS at all.
 */
import net from 'node:net';
import tls from 'node:tls';
import type { TLSConfig } from '@temporalio/client';

/** How long each probe may take: the failure has already cost a connect timeout. */
const PROBE_TIMEOUT_MS = 3_000;

/**
 * What the probes need of a target (src/temporal/connection.ts's TemporalTarget fits it): stated here, so that
 * the connection module imports this one and not the other way round.
 */
interface Target {
  address: string;
  tls: TLSConfig | undefined;
  auth: string;
}

/**
 * What to do about an X.509 v1 certificate, which Temporal's client (rustls) refuses as UnsupportedCertVersion.
 * `openssl x509 -req` makes one unless given extensions.
 */
export const V1_CERTIFICATE =
  "is an X.509 v1 certificate, which Temporal's client (rustls) refuses: reissue it as v3 by giving " +
  '`openssl x509 -req` an -extfile with basicConstraints=CA:FALSE, keyUsage=digitalSignature,keyEncipherment and extendedKeyUsage=clientAuth';

export async function diagnoseConnectFailure(t: Target, detail: string): Promise<string> {
  // rustls refuses the certificate before any connection; keeper's own check (connection.ts) catches the usual case.
  if (/UnsupportedCertVersion/.test(detail)) return `a TLS certificate of the connection to ${t.address} ${V1_CERTIFICATE} (${detail})`;
  const { host, port } = hostAndPort(t.address);
  const tcp = await probeTcp(host, port);
  if (tcp) return `no Temporal server answers at ${t.address}: ${tcp}`;
  if (!t.tls) {
    return `Temporal at ${t.address} accepts connections but not keeper's plaintext gRPC (${detail}); if it requires TLS, set TEMPORAL_TLS=true and its certificates`;
  }
  const refusal = await probeTls(host, port, t);
  return `Temporal at ${t.address} refused the TLS handshake (auth ${t.auth}): ${refusal ?? detail}`;
}

function hostAndPort(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(':');
  return { host: address.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(address.slice(i + 1)) };
}

/** Undefined when something accepts a TCP connection; otherwise why not. */
function probeTcp(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: PROBE_TIMEOUT_MS });
    socket.once('connect', () => (socket.destroy(), resolve(undefined)));
    socket.once('timeout', () => (socket.destroy(), resolve(`no answer within ${PROBE_TIMEOUT_MS} ms`)));
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED' ? 'connection refused' : err.message));
  });
}

/**
 * A TLS handshake with keeper's settings; the server's verdict on the client certificate comes as an alert
 * right after the handshake (TLS 1.3), so the connection is held open briefly to hear it.
 */
function probeTls(host: string, port: number, t: Target): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = tls.connect({
      host,
      port,
      ALPNProtocols: ['h2'],
      servername: t.tls?.serverNameOverride ?? host,
      ca: t.tls?.serverRootCACertificate ? Buffer.from(t.tls.serverRootCACertificate) : undefined,
      cert: t.tls?.clientCertPair ? Buffer.from(t.tls.clientCertPair.crt) : undefined,
      key: t.tls?.clientCertPair ? Buffer.from(t.tls.clientCertPair.key) : undefined,
    });
    const done = (why: string | undefined) => (clearTimeout(timer), socket.destroy(), resolve(why));
    const timer = setTimeout(() => done(undefined), PROBE_TIMEOUT_MS);
    socket.once('error', (err) => done(err.message));
    socket.once('secureConnect', () => socket.write(Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')));
    socket.once('close', () => done(undefined));
  });
}
