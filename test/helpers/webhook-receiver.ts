/**
 * A real HTTP receiver for keeper's alerts, on a loopback port of its own: it keeps every request it got (headers
 * and raw body) and answers with the status a test sets. It can go down (the port closed, connections cut) and
 * come back on the same port, as a receiver behind a restart would.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  atMs: number;
}

export class WebhookReceiver {
  readonly received: Received[] = [];
  /** What every request is answered with. */
  status = 204;
  private server: http.Server | undefined;

  private constructor(public port: number) {}

  static async start(port = 0): Promise<WebhookReceiver> {
    const r = new WebhookReceiver(port);
    await r.up();
    return r;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Listens (again) on its port. */
  async up(): Promise<void> {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), atMs: Date.now() });
        res.writeHead(this.status).end();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Stops listening and cuts open connections: a sender now gets ECONNREFUSED. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** The idempotency keys received, once each, in order of first arrival: what a deduplicating receiver keeps. */
  uniqueKeys(): string[] {
    return [...new Set(this.received.map((r) => String(r.headers['idempotency-key'])))];
  }

  /** Whether a request's signature header is the HMAC-SHA256 of its body under `secret`. */
  static signedWith(r: Received, secret: string): boolean {
    const expected = `sha256=${crypto.createHmac('sha256', secret).update(r.body).digest('hex')}`;
    const got = String(r.headers['x-keeper-signature'] ?? '');
    return got.length === expected.length && crypto.timingSafeEqual(Buffer.from(got), Buffer.from(expected));
  }
}
