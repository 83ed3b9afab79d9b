/**
 * A fault injector in front of a real Docker socket. It forwards every request to the engine unchanged,
 * except those matching a rule, which it answers itself with the rule's HTTP status, the way a struggling
 * engine would, and, while wedged, all of them, which it takes and never answers, the way a wedged engine does.
 * Tests point a DockerClient at `proxy.dockerHost`. It also records what was asked.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

export interface FaultRule {
  method?: string;
  /** Matched against the request path without the API version prefix, e.g. /containers/abc/json. */
  path: RegExp;
  status: number;
  /** How many matching requests to fail; unlimited when unset. */
  times?: number;
  /**
   * A body to answer with instead of the error document (with a 200: what a broken or hostile stream sends),
   * written chunk by chunk, each in a write of its own a few ms after the last, so they arrive apart.
   */
  chunks?: Buffer[];
}

export function engineSocket(dockerHost = process.env.DOCKER_HOST): string {
  if (dockerHost?.startsWith('unix://')) return dockerHost.slice('unix://'.length);
  return '/var/run/docker.sock';
}

export class DockerProxy {
  readonly requests: { method: string; path: string; injected: boolean }[] = [];
  private rules: FaultRule[] = [];
  private readonly eventStreams = new Set<http.ServerResponse>();
  /** The engine's side of each open event stream, so that a stall can stop passing it on. */
  private readonly upstreamOf = new Map<http.ServerResponse, http.IncomingMessage>();
  private streamsCut = false;
  /** Followed event streams (no `until`) opened from now on are held open and silent too. */
  private stallNew = false;
  /** While wedged: the requests taken and not answered, each with its body, and whether its client still waits. */
  private held: { req: http.IncomingMessage; res: http.ServerResponse; body: Buffer; waiting: boolean }[] | undefined;

  private constructor(
    private readonly server: http.Server,
    readonly socketPath: string,
    private readonly target: string,
  ) {}

  get dockerHost(): string {
    return `unix://${this.socketPath}`;
  }

  static async start(target = engineSocket()): Promise<DockerProxy> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keeper-proxy-'));
    const socketPath = path.join(dir, 'docker.sock');
    const server = http.createServer((req, res) => proxy.handle(req, res, target));
    const proxy = new DockerProxy(server, socketPath, target);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, resolve);
    });
    return proxy;
  }

  fail(rule: FaultRule): void {
    this.rules.push({ ...rule });
  }

  /**
   * A stream drop: destroys every open event stream (mid-response, as a dying connection would) and answers
   * new /events requests with 503 until `restoreStreams`. Other requests still pass.
   */
  cutStreams(): void {
    this.streamsCut = true;
    for (const res of this.eventStreams) res.destroy();
    this.eventStreams.clear();
  }

  restoreStreams(): void {
    this.streamsCut = false;
    this.stallNew = false;
  }

  /**
   * A half-open event stream (a stuck proxy, a wedged engine thread): every followed event stream open now stays
   * open and passes nothing more on; with `alsoNew`, so does every one opened later (until restoreStreams). The
   * engine's bounded event reads (with `until`) still pass.
   */
  stallStreams(opts: { alsoNew?: boolean } = {}): number {
    this.stallNew = opts.alsoNew ?? false;
    let stalled = 0;
    for (const res of this.eventStreams) {
      const up = this.upstreamOf.get(res);
      if (!up) continue;
      up.unpipe(res);
      up.resume();
      stalled++;
    }
    return stalled;
  }

  /**
   * A wedged engine (a deadlocked daemon): from now on every request, event streams included, is accepted and read
   * to its end, and never answered, until `release`. Streams already open go on as they were.
   */
  wedge(): void {
    this.held ??= [];
  }

  /** The engine wakes: the requests it held whose client still waits are passed on, and every later one too. */
  release(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const h of held) if (h.waiting) this.forward(h.req, h.res, this.target, h.body);
  }

  /** Requests taken while wedged whose client still waits for an answer. */
  get heldRequests(): number {
    return (this.held ?? []).filter((h) => h.waiting).length;
  }

  get openEventStreams(): number {
    return this.eventStreams.size;
  }

  clear(): void {
    this.rules = [];
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    fs.rmSync(path.dirname(this.socketPath), { recursive: true, force: true });
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse, target: string): void {
    const method = req.method ?? 'GET';
    const apiPath = (req.url ?? '/').replace(/^\/v\d+\.\d+/, '').split('?')[0];
    if (this.held) return this.hold(req, res, { method, path: apiPath, injected: true });
    if (apiPath === '/events' && this.streamsCut) {
      this.requests.push({ method, path: apiPath, injected: true });
      req.resume();
      res.writeHead(503, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ message: 'injected fault 503: event stream unavailable' }));
      return;
    }
    const rule = this.rules.find((r) => (!r.method || r.method === method) && r.path.test(apiPath) && r.times !== 0);
    this.requests.push({ method, path: apiPath, injected: !!rule });
    if (rule) {
      if (rule.times !== undefined) rule.times--;
      req.resume();
      res.writeHead(rule.status, { 'Content-Type': 'application/json' });
      if (rule.chunks) return void writeApart(res, rule.chunks);
      // The text deliberately says "not found": only the status may decide what an error means (W-11).
      res.end(JSON.stringify({ message: `injected fault ${rule.status}: No such container: not found (${method} ${apiPath})` }));
      return;
    }
    this.forward(req, res, target);
  }

  /** Takes a request and its body, and answers nothing (see wedge). */
  private hold(req: http.IncomingMessage, res: http.ServerResponse, asked: DockerProxy['requests'][number]): void {
    this.requests.push(asked);
    const parts: Buffer[] = [];
    const held = { req, res, body: Buffer.alloc(0), waiting: true };
    this.held!.push(held);
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => (held.body = Buffer.concat(parts)));
    res.on('close', () => (held.waiting = false));
  }

  /** Passes a request on to the engine, and its answer back; `body`: the request's, already read (a held one). */
  private forward(req: http.IncomingMessage, res: http.ServerResponse, target: string, body?: Buffer): void {
    const method = req.method ?? 'GET';
    const apiPath = (req.url ?? '/').replace(/^\/v\d+\.\d+/, '').split('?')[0];
    // dockerode sends `until=` (empty) when a stream has no end.
    const followed = apiPath === '/events' && !new URL(req.url ?? '/', 'http://engine').searchParams.get('until');
    const upstream = http.request({ socketPath: target, method, path: req.url, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      // A stream (events) may send no body for a long time: its client waits for the headers alone.
      res.flushHeaders();
      if (followed && this.stallNew) up.resume();
      else up.pipe(res);
      if (followed) this.upstreamOf.set(res, up);
    });
    upstream.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ message: `proxy: ${err.message}` }));
    });
    if (apiPath === '/events') {
      this.eventStreams.add(res);
      res.on('close', () => (this.eventStreams.delete(res), this.upstreamOf.delete(res)));
    }
    res.on('close', () => upstream.destroy());
    if (body) upstream.end(body);
    else req.pipe(upstream);
  }
}

async function writeApart(res: http.ServerResponse, chunks: Buffer[]): Promise<void> {
  for (const chunk of chunks) {
    await new Promise((flushed) => res.write(chunk, flushed));
    await new Promise((r) => setTimeout(r, 20)); // so that the client most likely reads it alone
  }
  res.end();
}
