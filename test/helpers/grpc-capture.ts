/**
 * A gRPC-level capture in front of a Temporal frontend: a TLS HTTP/2 server (with the frontend's own server
 * certificate, so clients verify it as they would the frontend) that records every request's headers and
 * forwards each stream unchanged to the real frontend over mTLS, trailers included. A server with no
 * authorizer accepts any API key, so this is how a test sees what keeper sends. No vitest imports.
 */
import fs from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';

export interface GrpcCapture {
  address: string;
  /** Headers of every request forwarded so far, in order. */
  requests: { path: string; headers: http2.IncomingHttpHeaders }[];
  close(): Promise<void>;
}

export interface CaptureOptions {
  upstream: string;
  /** The server certificate and key the capture presents (the frontend's). */
  serverCertFile: string;
  serverKeyFile: string;
  /** How the capture connects on: the CA, a client certificate the frontend accepts, the name to verify. */
  caFile: string;
  clientCertFile: string;
  clientKeyFile: string;
  serverName: string;
}

const HOP_HEADERS = new Set([':method', ':path', ':scheme', ':authority', ':status']);

export async function startGrpcCapture(o: CaptureOptions): Promise<GrpcCapture> {
  const upstream = http2.connect(`https://${o.upstream}`, {
    ca: fs.readFileSync(o.caFile),
    cert: fs.readFileSync(o.clientCertFile),
    key: fs.readFileSync(o.clientKeyFile),
    servername: o.serverName,
  });
  upstream.on('error', () => undefined); // surfaced per stream
  const requests: GrpcCapture['requests'] = [];
  const server = http2.createSecureServer({ cert: fs.readFileSync(o.serverCertFile), key: fs.readFileSync(o.serverKeyFile) });
  server.on('stream', (down, headers) => {
    requests.push({ path: String(headers[':path']), headers });
    forward(upstream, down, headers);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    async close() {
      upstream.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function forward(upstream: http2.ClientHttp2Session, down: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
  const outgoing: http2.OutgoingHttpHeaders = { ':method': headers[':method'], ':path': headers[':path'] };
  for (const [k, v] of Object.entries(headers)) if (!HOP_HEADERS.has(k)) outgoing[k] = v;
  const up = upstream.request(outgoing);
  down.pipe(up);
  const open = () => !down.destroyed && !down.closed;
  up.on('response', (responseHeaders) => {
    if (!open()) return;
    // A trailers-only response (an error before any message) carries grpc-status in its headers.
    if ('grpc-status' in responseHeaders) return void down.respond(responseHeaders, { endStream: true });
    down.respond(responseHeaders, { waitForTrailers: true });
    up.pipe(down);
  });
  let trailers: http2.IncomingHttpHeaders = {};
  up.on('trailers', (t) => (trailers = t));
  down.on('wantTrailers', () => open() && down.sendTrailers(trailers));
  up.on('error', () => down.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
  down.on('error', () => up.close(http2.constants.NGHTTP2_CANCEL));
}
