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
import { statusAge } from '../../src/policy/container-status';
import { humanDuration } from './memory-engine';

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
  /** Followed streams that pass nothing more on (stallStreams). */
  private readonly stalled = new Set<http.ServerResponse>();
  /** Followed event streams (no `until`) opened from now on are held open and silent too. */
  private stallNew = false;
  /** lagListAfterDeaths: the list entries to answer with instead of the engine's, by container id, and until when. */
  private lagMs: number | undefined;
  private readonly lastRunning = new Map<string, ListedRunning>();
  private readonly lagged = new Map<string, { was: ListedRunning; untilMs: number }>();
  /** List answers that showed a dead container as it was before its death (lagListAfterDeaths). */
  staleListAnswers = 0;
  /** reportOomLate: what the engine has not handled yet of the kernel's OOM kills. */
  private oomLate: { inspect: boolean; events: boolean } | undefined;
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
      if (!this.upstreamOf.has(res)) continue;
      this.stalled.add(res);
      stalled++;
    }
    return stalled;
  }

  /**
   * Docker's list lags a death: the engine sends `die` before its container list shows it (the list is a copy it
   * updates once its exit handler is done; an inspect waits for that handler). This makes the lag as long as a test
   * needs: from the moment a `die` passes through a followed event stream on its way to the client, each list answer
   * shows that container as the last list showed it running, until the container is inspected (an inspect waits for
   * the truth) or `maxMs` have passed. The client gets the event only after the lag has begun.
   */
  lagListAfterDeaths(maxMs = 30_000): void {
    this.lagMs = maxMs;
  }

  /**
   * Docker reports an OOM kill late under load: the exit (137) comes first, and until the engine has handled the
   * kernel's OOM notification its inspect says OOMKilled false and its `oom` event is not out yet. This makes it as
   * late as a test needs: inspects say OOMKilled false, and with `events` the `oom` events are left out of every
   * bounded event read (with `until`; a followed stream passes them), until `reportOomLate(undefined)`.
   */
  reportOomLate(late: { inspect: boolean; events: boolean } | undefined): void {
    this.oomLate = late;
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

  /** An inspect or a bounded event read as the engine answers before it has handled an OOM kill (reportOomLate). */
  private withoutOom(req: http.IncomingMessage, res: http.ServerResponse, target: string, events: boolean): void {
    const late = this.oomLate!;
    this.rewritten(req, res, target, (body) => {
      if (events)
        return late.events
          ? body
              .split('\n')
              .filter((l) => !/"Action":"oom"/.test(l))
              .join('\n')
          : body;
      if (!late.inspect) return body;
      const c = JSON.parse(body) as { State?: { OOMKilled?: boolean } };
      if (c.State) c.State.OOMKilled = false;
      return JSON.stringify(c);
    });
  }

  /** Forwards a request whose whole answer is read, changed by `change` when the engine answered 200, and sent on. */
  private rewritten(req: http.IncomingMessage, res: http.ServerResponse, target: string, change: (body: string) => string): void {
    const upstream = http.request({ socketPath: target, method: req.method, path: req.url, headers: req.headers }, (up) => {
      const chunks: Buffer[] = [];
      up.on('data', (c: Buffer) => chunks.push(c));
      up.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const out = up.statusCode === 200 ? change(body) : body;
        const headers = { ...up.headers, 'content-length': String(Buffer.byteLength(out)) };
        delete headers['transfer-encoding'];
        res.writeHead(up.statusCode ?? 502, headers);
        res.end(out);
      });
    });
    upstream.on('error', (err) => res.writeHead(502).end(JSON.stringify({ message: `proxy: ${err.message}` })));
    req.pipe(upstream);
  }

  /** A list answer with the lagged containers as they were before their deaths. */
  private lagList(req: http.IncomingMessage, res: http.ServerResponse, target: string): void {
    this.rewritten(req, res, target, (body) => {
      const now = Date.now();
      const list = (JSON.parse(body) as ListEntry[]).map((c) => {
        const lag = this.lagged.get(c.Id);
        if (lag && lag.untilMs > now) return (this.staleListAnswers++, runningAsOf(lag.was, now));
        if (c.State === 'running') this.lastRunning.set(c.Id, { entry: c, startedAtMs: now - (statusAge(c.Status)?.minSec ?? 0) * 1000 });
        return c;
      });
      return JSON.stringify(list);
    });
  }

  /**
   * Passes a followed event stream on, line by line: nothing once it is stalled, and with lagListAfterDeaths a
   * container's list lag starts before its `die` reaches the client.
   */
  private passEvents(up: http.IncomingMessage, res: http.ServerResponse): void {
    let partial = '';
    up.on('data', (chunk: Buffer) => {
      if (this.stalled.has(res)) return;
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop() ?? '';
      if (this.lagMs !== undefined) for (const line of lines) this.lagIfDeath(line, this.lagMs);
      res.write(chunk);
    });
    up.on('end', () => res.end());
    // The engine went away mid-stream (dockerd's exit): the client's stream breaks too, as it would on the engine's
    // own socket; ending it cleanly, or not at all, would hide the break from the client.
    up.on('close', () => {
      if (!up.complete) res.destroy();
    });
  }

  /** A `die` event's line starts its container's list lag, if the list has shown that container running. */
  private lagIfDeath(line: string, lagMs: number): void {
    let e: { Action?: string; Actor?: { ID?: string } };
    try {
      e = JSON.parse(line);
    } catch {
      return; // not an event: passed on as it is, the client decides
    }
    const id = e.Actor?.ID;
    const before = id === undefined ? undefined : this.lastRunning.get(id);
    if (e.Action === 'die' && id && before) this.lagged.set(id, { was: before, untilMs: Date.now() + lagMs });
  }

  /** An inspect waits for the engine's exit handler: the list shows the truth from then on. */
  private releaseLag(ref: string): void {
    for (const id of this.lagged.keys()) if (id.startsWith(ref)) this.lagged.delete(id);
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
    if (this.lagMs !== undefined && method === 'GET' && apiPath === '/containers/json') return this.lagList(req, res, target);
    if (this.oomLate && method === 'GET' && (/^\/containers\/[^/]+\/json$/.test(apiPath) || (apiPath === '/events' && !followed)))
      return this.withoutOom(req, res, target, apiPath === '/events');
    const inspected = this.lagMs !== undefined && /^\/containers\/([^/]+)\/json$/.exec(apiPath)?.[1];
    const upstream = http.request({ socketPath: target, method, path: req.url, headers: req.headers }, (up) => {
      if (inspected) up.on('end', () => this.releaseLag(inspected));
      res.writeHead(up.statusCode ?? 502, up.headers);
      // A stream (events) may send no body for a long time: its client waits for the headers alone.
      res.flushHeaders();
      if (followed && this.stallNew) this.stalled.add(res);
      if (followed) this.passEvents(up, res);
      else up.pipe(res);
      if (followed) this.upstreamOf.set(res, up);
    });
    upstream.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ message: `proxy: ${err.message}` }));
    });
    if (apiPath === '/events') {
      this.eventStreams.add(res);
      res.on('close', () => (this.eventStreams.delete(res), this.upstreamOf.delete(res), this.stalled.delete(res)));
    }
    res.on('close', () => upstream.destroy());
    if (body) upstream.end(body);
    else req.pipe(upstream);
  }
}

/** A list entry, as the engine answers `GET /containers/json`. */
interface ListEntry {
  Id: string;
  State?: string;
  Status: string;
}

/** A container the list last showed running, and when it started (to the second, from its status text). */
interface ListedRunning {
  entry: ListEntry;
  startedAtMs: number;
}

/** The entry the engine's lagging list gives: the container still running, its uptime worded at `nowMs` as Docker words it. */
function runningAsOf(was: ListedRunning, nowMs: number): ListEntry {
  const up = `Up ${humanDuration((nowMs - was.startedAtMs) / 1000)}`;
  return { ...was.entry, State: 'running', Status: was.entry.Status.replace(/^Up .*?(?= \(|$)/, up) };
}

async function writeApart(res: http.ServerResponse, chunks: Buffer[]): Promise<void> {
  for (const chunk of chunks) {
    await new Promise((flushed) => res.write(chunk, flushed));
    await new Promise((r) => setTimeout(r, 20)); // so that the client most likely reads it alone
  }
  res.end();
}
