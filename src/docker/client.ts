/**
 * The one way keeper reaches Docker: a thin adapter over dockerode. It returns plain, small objects, classifies
 * every engine error by its HTTP status (never by its text), and counts the API calls it makes, so that
 * benchmarks and tick results can say what a loop cost.
 */
import Docker from 'dockerode';
import readline from 'node:readline';
import { Readable, Writable } from 'node:stream';
import type {
  ContainerDetails,
  ContainerSpec,
  ContainerSummary,
  ContainerUsage,
  DockerEvent,
  Engine,
  EngineInfo,
  EngineRuntimes,
  EventQuery,
  ImageSummary,
  LabelFilter,
  LogReadLimits,
  LogWindow,
  NetworkCreateOptions,
  NetworkDetails,
  PullProgressEvent,
  RepoImageSummary,
  VolumeSummary,
} from './engine';
import { DockerError, DockerTimeout } from './errors';
import { firstLine } from '../text';

/**
 * How long the engine has to answer each kind of call before it is aborted and fails with a DockerTimeout (a wedged
 * engine accepts connections and answers nothing: without a deadline, every caller would wait with it). Pulls,
 * followed event streams and log reads between two times have bounds of their own, given by their callers.
 */
export interface EngineDeadlines {
  /** list, inspect, info, version, ping, a log tail: answers from the engine's memory, in milliseconds when well. */
  readMs: number;
  /** create, start, remove, rename, volumes, networks, image removal: changes the engine makes on disk. */
  changeMs: number;
  /** stop and restart: the grace the engine waits before its kill, and this much more. */
  stopMarginMs: number;
}

/**
 * A worker's: a read 10 s (a list of hundreds of containers takes a fraction of a second; an inspect may wait for a
 * container's lock while the engine stops it), a change a minute (a gVisor start on a loaded host takes seconds).
 */
export const WORKER_DEADLINES: EngineDeadlines = { readMs: 10_000, changeMs: 60_000, stopMarginMs: 15_000 };
/** A one-shot command's: it answers its operator within seconds, so its reads get 5 s. */
export const COMMAND_DEADLINES: EngineDeadlines = { ...WORKER_DEADLINES, readMs: 5_000 };

export interface DockerClientOptions {
  deadlines?: Partial<EngineDeadlines>;
  /**
   * A one-shot command's client: its first call waits for the engine to answer a ping (within the read deadline),
   * and once a call has gone unanswered, every later call fails at once with a line that says so. A command that
   * makes many calls (a status, a drain, an uninstall) then answers within seconds of a wedged engine, not after
   * each call's deadline in turn. A worker's client asks each call anew: it outlives a wedge.
   */
  oneShot?: boolean;
}

/** The fields of `GET /info` keeper reads. */
interface DockerInfo {
  ServerVersion: string;
  DockerRootDir: string;
  Containers: number;
  ContainersRunning: number;
}

/** What ah gives every tenant container: no capabilities, no privilege gain, bounded pids, small tmpfs mounts. */
const CONFINEMENT = {
  CapDrop: ['ALL'],
  SecurityOpt: ['no-new-privileges'],
  PidsLimit: 256,
  Tmpfs: {
    '/tmp': 'rw,noexec,nosuid,size=64m',
    '/var/run': 'rw,noexec,nosuid,size=16m',
    '/var/tmp': 'rw,noexec,nosuid,size=16m',
    '/run': 'rw,noexec,nosuid,size=16m',
  },
};

/**
 * A failure of a dockerode call as a DockerError: the engine's HTTP status when it answered (its message's first
 * line), else the socket's error code ("no response"), which is transient.
 */
export function toDockerError(operation: string, err: unknown): DockerError {
  if (err instanceof DockerError) return err;
  const e = err as { statusCode?: number; json?: { message?: string }; message?: string; code?: string };
  const status = typeof e?.statusCode === 'number' ? e.statusCode : undefined;
  const detail = e?.json?.message ?? e?.message ?? String(err);
  const what = status !== undefined ? `HTTP ${status}` : (e?.code ?? 'no response');
  return new DockerError(operation, status, `docker ${operation}: ${what}: ${firstLine(detail)}`);
}

function toUnixSeconds(iso: string | undefined): number {
  if (!iso || iso.startsWith('0001-')) return 0;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? 0 : Math.floor(ms / 1000);
}

/** An engine time (RFC 3339) as unix ms; null for Docker's zero time ("0001-01-01T00:00:00Z": never) or none. */
export function toUnixMs(iso: string | undefined): number | null {
  const sec = toUnixSeconds(iso);
  return sec === 0 ? null : Date.parse(iso as string);
}

function labelFilters(labels: LabelFilter): string[] {
  return Object.entries(labels).map(([k, v]) => (v === true ? k : `${k}=${v}`));
}

/** Parses DOCKER_HOST-style addresses; undefined leaves dockerode to its own defaults. */
export function dockerOptions(dockerHost: string | undefined): Docker.DockerOptions | undefined {
  if (!dockerHost) return undefined;
  if (dockerHost.startsWith('unix://')) return { socketPath: dockerHost.slice('unix://'.length) };
  const url = new URL(dockerHost.replace(/^tcp:/, 'http:'));
  return { host: url.hostname, port: Number(url.port || 2375), protocol: 'http' };
}

/**
 * A container, volume or network id or name goes into the request path: one that Docker could never have
 * made ('', '../x', 'a b; c') is refused here, with a 400 (never a 404, which would read as "gone"). Found by
 * test/reliability/bad-input.test.ts: an empty id made the engine answer 301 and the redirect that followed
 * threw an uncaught getaddrinfo error that would end the worker; '../' reached other endpoints.
 */
function pathRef(ref: string): string {
  if (typeof ref !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(ref)) {
    throw new DockerError('ref', 400, `docker: refused malformed id or name ${JSON.stringify(String(ref).slice(0, 70))}`);
  }
  return ref;
}

/** An image reference (repo[:tag] or id, slashes allowed) with no empty or dot-dot path segment. */
function imageRef(ref: string): string {
  if (typeof ref !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9_.:@/-]*$/.test(ref) || ref.split('/').some((p) => p === '' || p === '..')) {
    throw new DockerError('ref', 400, `docker: refused malformed image reference ${JSON.stringify(String(ref).slice(0, 70))}`);
  }
  return ref;
}

export class DockerClient implements Engine {
  private readonly docker: Docker;
  readonly deadlines: EngineDeadlines;
  /** API calls made, by operation; reset it between measurements. */
  readonly calls = new Map<string, number>();
  /** Told of every API call (the worker counts them in its metrics). */
  onCall: ((operation: string) => void) | undefined;
  /** A one-shot client's first ping (see DockerClientOptions.oneShot). */
  private firstAnswer: Promise<void> | undefined;
  /** A one-shot client's first call that went unanswered: every later call fails at once. */
  private silence: DockerTimeout | undefined;

  /** `dockerHost` as DOCKER_HOST spells it; unset: dockerode's own default (DOCKER_HOST, else the local socket). */
  constructor(
    dockerHost?: string,
    private readonly options: DockerClientOptions = {},
  ) {
    this.docker = new Docker(dockerOptions(dockerHost));
    this.deadlines = { ...WORKER_DEADLINES, ...options.deadlines };
  }

  /** `host:port` of an engine reached over TCP, whose disk this process cannot see; undefined for a local socket. */
  get remoteAddress(): string | undefined {
    const modem = this.docker.modem as { host?: string; port?: number | string };
    return modem.host ? `${modem.host}:${modem.port ?? ''}` : undefined;
  }

  get totalCalls(): number {
    let n = 0;
    for (const v of this.calls.values()) n += v;
    return n;
  }

  resetCalls(): void {
    this.calls.clear();
  }

  /**
   * One API call, counted, with a deadline: a call the engine has not answered within `deadlineMs` is aborted (its
   * request closed, through the signal `fn` hands to dockerode) and fails with a DockerTimeout. `deadlineMs`
   * undefined: the call is bounded by its caller (a pull, a followed stream, a log read between two times).
   */
  private async call<T>(op: string, deadlineMs: number | undefined, fn: (signal?: AbortSignal) => Promise<T>): Promise<T> {
    await this.answering(op);
    this.calls.set(op, (this.calls.get(op) ?? 0) + 1);
    this.onCall?.(op);
    if (deadlineMs === undefined) return fn().catch((err: unknown) => Promise.reject(toDockerError(op, err)));
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const ranOut = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        const silent = new DockerTimeout(op, deadlineMs);
        if (this.options.oneShot) this.silence ??= silent;
        controller.abort(silent);
        reject(silent);
      }, deadlineMs);
    });
    try {
      // The race also ends a call whose request would not end with its signal.
      return await Promise.race([fn(controller.signal), ranOut]);
    } catch (err) {
      throw controller.signal.aborted ? (controller.signal.reason as DockerTimeout) : toDockerError(op, err);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A one-shot client's gate: a ping before its first call, and no call at all once one went unanswered. */
  private async answering(op: string): Promise<void> {
    if (!this.options.oneShot || op === 'ping') return;
    this.firstAnswer ??= this.ping().catch(() => undefined); // a refusal is each call's own to report
    await this.firstAnswer;
    if (this.silence) throw new DockerTimeout(op, this.silence.deadlineMs, this.silence.operation);
  }

  /** The deadline of a read, and of a change (see EngineDeadlines). */
  private get read(): number {
    return this.deadlines.readMs;
  }

  private get change(): number {
    return this.deadlines.changeMs;
  }

  /** A stop or restart waits `graceSeconds` for the process before the engine kills it: that, and a margin. */
  private stopDeadline(graceSeconds: number): number {
    return graceSeconds * 1000 + this.deadlines.stopMarginMs;
  }

  /** A GET whose JSON answer is the result, aborted with `signal`; for what dockerode's types or calls take no signal for. */
  private get<T>(path: string, signal: AbortSignal | undefined, statusCodes: Record<number, string>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.docker.modem.dial(
        {
          path: `${path}?`,
          method: 'GET',
          abortSignal: signal,
          statusCodes: { 200: true, 500: 'server error', ...statusCodes },
          options: {},
        },
        (err: unknown, data: unknown) => (err ? reject(err) : resolve(data as T)),
      );
    });
  }

  // ---- engine ----

  /** One `_ping`: whether the engine answers at all. */
  async ping(): Promise<void> {
    await this.call('ping', this.read, (abortSignal) => this.get('/_ping', abortSignal, {}));
  }

  async info(): Promise<EngineInfo> {
    const info = await this.call('info', this.read, (abortSignal) => this.get<DockerInfo>('/info', abortSignal, {}));
    const version = await this.call('version', this.read, (abortSignal) => this.get<Docker.DockerVersion>('/version', abortSignal, {}));
    return {
      serverVersion: info.ServerVersion,
      apiVersion: version.ApiVersion,
      dockerRootDir: info.DockerRootDir,
      containers: info.Containers,
      containersRunning: info.ContainersRunning,
    };
  }

  /** One `info` call: the runtimes registered with the engine (daemon.json `runtimes`, plus its built-in ones). */
  async runtimes(): Promise<EngineRuntimes> {
    type Registered = { runtimeArgs?: string[] };
    const info = (await this.call('info', this.read, (abortSignal) => this.get('/info', abortSignal, {}))) as {
      Runtimes?: Record<string, Registered>;
      DefaultRuntime?: string;
    };
    const runtimes = info.Runtimes ?? {};
    const args = Object.fromEntries(Object.entries(runtimes).map(([name, r]) => [name, r?.runtimeArgs ?? []]));
    return { names: Object.keys(runtimes).sort(), defaultRuntime: info.DefaultRuntime ?? '', args };
  }

  // ---- containers ----

  /** One list call, filtered by label on the server; `all` includes stopped containers. */
  async listContainers(labels: LabelFilter, opts: { all?: boolean } = {}): Promise<ContainerSummary[]> {
    const list = await this.call('container.list', this.read, (abortSignal) =>
      this.docker.listContainers({ all: opts.all ?? true, filters: { label: labelFilters(labels) }, abortSignal }),
    );
    return list.map((c) => ({
      id: c.Id,
      name: (c.Names?.[0] ?? '').replace(/^\//, ''),
      image: c.Image,
      labels: c.Labels ?? {},
      state: (c.State ?? '').toLowerCase(),
      status: c.Status ?? '',
      createdAt: c.Created,
    }));
  }

  /** One list call over every container of any state, with the image, networks and volumes each uses. */
  async listContainerUsage(): Promise<ContainerUsage[]> {
    const list = await this.call('container.list', this.read, (abortSignal) => this.docker.listContainers({ all: true, abortSignal }));
    return list.map((c) => {
      const networks = new Set(Object.keys(c.NetworkSettings?.Networks ?? {}));
      const mode = c.HostConfig?.NetworkMode;
      if (mode && !['default', 'bridge', 'host', 'none'].includes(mode) && !mode.startsWith('container:')) networks.add(mode);
      return {
        id: c.Id,
        name: (c.Names?.[0] ?? '').replace(/^\//, ''),
        state: (c.State ?? '').toLowerCase(),
        status: c.Status ?? '',
        labels: c.Labels ?? {},
        image: c.Image,
        imageId: c.ImageID,
        createdAt: c.Created,
        networks: [...networks],
        volumes: (c.Mounts ?? []).filter((m) => m.Type === 'volume' && m.Name).map((m) => m.Name as string),
      };
    });
  }

  async inspectContainer(idOrName: string): Promise<ContainerDetails> {
    const c = await this.call('container.inspect', this.read, (abortSignal) =>
      this.docker.getContainer(pathRef(idOrName)).inspect({ abortSignal }),
    );
    return {
      id: c.Id,
      name: c.Name.replace(/^\//, ''),
      image: c.Config.Image,
      labels: c.Config.Labels ?? {},
      status: (c.State.Status ?? '').toLowerCase(),
      exitCode: c.State.ExitCode,
      health: (c.State as { Health?: { Status?: string } }).Health?.Status ?? '',
      unhealthySinceMs: unhealthySinceMs(c as unknown as HealthOf),
      restartCount: c.RestartCount ?? 0,
      pid: c.State.Pid ?? 0,
      startedAt: toUnixSeconds(c.State.StartedAt),
      finishedAt: toUnixSeconds(c.State.FinishedAt),
      startedAtMs: toUnixMs(c.State.StartedAt),
      finishedAtMs: toUnixMs(c.State.FinishedAt),
      oomKilled: c.State.OOMKilled === true,
      error: c.State.Error ?? '',
      restartPolicy: c.HostConfig?.RestartPolicy?.Name ?? '',
      createdAt: toUnixSeconds(c.Created),
      mounts: (c.Mounts ?? []).map((m) => ({ type: m.Type, name: m.Name, destination: m.Destination })),
      networks: Object.keys(c.NetworkSettings?.Networks ?? {}),
      runtime: (c.HostConfig as { Runtime?: string } | undefined)?.Runtime ?? '',
    };
  }

  /** Creates a container and returns its id; it is not started. */
  async createContainer(spec: ContainerSpec): Promise<string> {
    const hc = spec.healthcheck;
    const created = await this.call('container.create', this.change, (abortSignal) =>
      this.docker.createContainer({
        abortSignal,
        name: spec.name,
        Image: spec.image,
        Cmd: spec.cmd,
        Env: spec.env ? Object.entries(spec.env).map(([k, v]) => `${k}=${v}`) : undefined,
        Labels: spec.labels,
        WorkingDir: spec.workingDir,
        Healthcheck: hc && {
          Test: ['CMD', ...hc.cmd],
          Interval: hc.intervalMs * 1e6,
          Timeout: (hc.timeoutMs ?? hc.intervalMs) * 1e6,
          Retries: hc.retries ?? 1,
          StartPeriod: (hc.startPeriodMs ?? 0) * 1e6,
        },
        HostConfig: {
          RestartPolicy: { Name: spec.restartPolicy ?? 'no' },
          NetworkMode: spec.network,
          Mounts: spec.volumes?.map((v) => ({ Type: 'volume' as const, Source: v.name, Target: v.target })),
          Memory: spec.memoryBytes,
          MemorySwap: spec.memoryBytes,
          NanoCpus: spec.nanoCpus,
          Init: spec.init,
          ...(spec.confined ? { ...CONFINEMENT, ReadonlyRootfs: spec.confined.readonlyRootfs, Runtime: spec.confined.runtime } : {}),
        },
      }),
    );
    return created.id;
  }

  async startContainer(id: string): Promise<boolean> {
    try {
      await this.call('container.start', this.change, (abortSignal) => this.docker.getContainer(pathRef(id)).start({ abortSignal }));
      return true;
    } catch (err) {
      ignoreStatus(304)(err);
      return false;
    }
  }

  /** Stops with a grace period; stopping a stopped container is not an error. */
  async stopContainer(id: string, graceSeconds = 10): Promise<void> {
    await this.call('container.stop', this.stopDeadline(graceSeconds), (abortSignal) =>
      this.docker.getContainer(pathRef(id)).stop({ t: graceSeconds, abortSignal }),
    ).catch(ignoreStatus(304));
  }

  async restartContainer(id: string, graceSeconds = 10): Promise<void> {
    await this.call('container.restart', this.stopDeadline(graceSeconds), (abortSignal) =>
      this.docker.getContainer(pathRef(id)).restart({ t: graceSeconds, abortSignal }),
    );
  }

  async removeContainer(id: string, opts: { force?: boolean } = {}): Promise<void> {
    await this.call('container.remove', this.change, (abortSignal) =>
      this.docker.getContainer(pathRef(id)).remove({ force: opts.force ?? false, abortSignal }),
    );
  }

  async renameContainer(id: string, name: string): Promise<void> {
    await this.call('container.rename', this.change, (abortSignal) => this.docker.getContainer(pathRef(id)).rename({ name, abortSignal }));
  }

  /** The last `tail` lines of a container's output, stdout and stderr interleaved as the engine sent them. */
  async containerLogs(id: string, tail = 100): Promise<string> {
    const raw = (await this.call('container.logs', this.read, (abortSignal) =>
      this.docker.getContainer(pathRef(id)).logs({ stdout: true, stderr: true, tail, follow: false, abortSignal }),
    )) as unknown as Buffer;
    return this.demultiplexed(Buffer.isBuffer(raw) ? raw : Buffer.from(String(raw)));
  }

  /** stdout and stderr of a framed log read, in the engine's order, through docker-modem's own demultiplexer. */
  private async demultiplexed(raw: Buffer): Promise<string> {
    if (!isFramed(raw)) return raw.toString('utf8'); // a container with a TTY: its output comes as it is
    const parts: Buffer[] = [];
    const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => (parts.push(chunk), done()) });
    await new Promise<void>((resolve, reject) => {
      const source = Readable.from([raw]);
      source.on('end', resolve);
      source.on('error', reject);
      this.docker.modem.demuxStream(source, sink, sink);
    });
    return Buffer.concat(parts).toString('utf8');
  }

  /**
   * What a container wrote between two times (unix ms), stdout and stderr in the engine's order, of which only
   * the last `keepBytes` are kept in memory. The window bounds the read: `until` cannot be combined with
   * `tail`, which the engine applies to the whole log before the times. Past `maxReadBytes` the read stops
   * (`complete: false`); a read still going after `timeoutMs` is aborted (a transient DockerError).
   */
  async containerLogsBetween(id: string, window: LogWindow, limits: LogReadLimits): Promise<{ text: string; complete: boolean }> {
    const secs = (ms: number) => (ms / 1000).toFixed(3);
    const signal = AbortSignal.timeout(limits.timeoutMs);
    const stream = await this.call(
      'container.logs',
      undefined,
      () =>
        new Promise<Readable>((resolve, reject) => {
          this.docker.modem.dial(
            {
              path: `/containers/${pathRef(id)}/logs?`,
              method: 'GET',
              isStream: true,
              abortSignal: signal,
              statusCodes: { 200: true, 404: 'no such container', 500: 'server error', 501: 'logs not supported by the log driver' },
              options: { stdout: true, stderr: true, follow: false, since: secs(window.sinceMs), until: secs(window.untilMs) },
            },
            (err: unknown, res: unknown) => (err ? reject(err) : resolve(res as Readable)),
          );
        }),
    );
    const kept = new TailBuffer(limits.keepBytes);
    let read = 0;
    const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => (kept.push(chunk), done()) });
    const complete = await new Promise<boolean>((resolve, reject) => {
      stream.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > limits.maxReadBytes) {
          stream.destroy();
          resolve(false);
        }
      });
      this.docker.modem.demuxStream(stream, sink, sink);
      stream.on('end', () => resolve(true));
      stream.on('close', () => resolve(read <= limits.maxReadBytes));
      stream.on('error', (err) => reject(toDockerError('container.logs', err)));
    });
    return { text: kept.text(), complete };
  }

  // ---- volumes ----

  async createVolume(name: string, labels: Record<string, string> = {}): Promise<void> {
    await this.call('volume.create', this.change, (abortSignal) => this.docker.createVolume({ Name: name, Labels: labels, abortSignal }));
  }

  /** One list call; `namePrefix` is Docker's substring filter, re-checked here as a strict prefix. */
  async listVolumes(namePrefix?: string): Promise<VolumeSummary[]> {
    const res = await this.call('volume.list', this.read, (abortSignal) =>
      this.docker.listVolumes({ ...(namePrefix ? { filters: { name: [namePrefix] } } : {}), abortSignal }),
    );
    return (res.Volumes ?? [])
      .filter((v) => !namePrefix || v.Name.startsWith(namePrefix))
      .map((v) => ({
        name: v.Name,
        labels: v.Labels ?? {},
        createdAt: toUnixSeconds((v as { CreatedAt?: string }).CreatedAt),
      }));
  }

  /** Never forced: the engine refuses (409) to remove a volume that any container uses. */
  async removeVolume(name: string): Promise<void> {
    await this.call('volume.remove', this.change, (abortSignal) =>
      this.docker.getVolume(pathRef(name)).remove({ force: false, abortSignal }),
    );
  }

  // ---- images ----

  /** One list call: untagged images that no tagged image has as a parent. */
  async listDanglingImages(): Promise<ImageSummary[]> {
    const list = await this.call('image.list', this.read, (abortSignal) =>
      this.docker.listImages({ filters: { dangling: ['true'] }, abortSignal }),
    );
    return list.map((i) => ({ id: i.Id, labels: i.Labels ?? {}, createdAt: i.Created }));
  }

  /** One list call; the engine's reference filter matches the repository name, and the prefix is checked again here. */
  async listImagesUnder(repoPrefix: string): Promise<RepoImageSummary[]> {
    const list = await this.call('image.list', this.read, (abortSignal) =>
      this.docker.listImages({ filters: { reference: [`${repoPrefix}*`] }, abortSignal }),
    );
    const under = (refs: string[] | null | undefined) => (refs ?? []).some((r) => r.startsWith(repoPrefix));
    return list
      .filter((i) => under(i.RepoTags) || under(i.RepoDigests))
      .map((i) => ({ id: i.Id, repoTags: i.RepoTags ?? [], repoDigests: i.RepoDigests ?? [], createdAt: i.Created }));
  }

  async removeImage(ref: string): Promise<void> {
    await this.call('image.remove', this.change, (abortSignal) =>
      this.docker.getImage(imageRef(ref)).remove({ noprune: true, abortSignal }),
    );
  }

  /**
   * Pulls `ref` (repo[:tag] or repo@digest) with no credentials, telling `onProgress` each progress line. Fails with
   * the engine's answer when it refuses at once (404: no such manifest), or with the error it reports mid-stream.
   */
  async pullImage(ref: string, onProgress: (e: PullProgressEvent) => void, signal?: AbortSignal): Promise<void> {
    const { repository, tag } = parseImageRef(imageRef(ref));
    const stream = await this.call(
      'image.pull',
      undefined,
      () =>
        new Promise<Readable>((resolve, reject) => {
          this.docker.modem.dial(
            {
              path: '/images/create?',
              method: 'POST',
              isStream: true,
              abortSignal: signal,
              statusCodes: { 200: true, 404: 'no such image', 500: 'server error' },
              options: { fromImage: repository, tag },
            },
            (err: unknown, res: unknown) => (err ? reject(withStreamCause(err)) : resolve(res as Readable)),
          );
        }),
    );
    let reported: string | undefined;
    await new Promise<void>((resolve, reject) => {
      this.docker.modem.followProgress(
        stream,
        (err: unknown) => {
          if (err) reject(toDockerError('image.pull', err));
          else if (reported !== undefined) reject(new DockerError('image.pull', undefined, `docker image.pull: ${reported}`));
          else resolve();
        },
        (e: PullProgressEvent & { errorDetail?: { message?: string } }) => {
          if (e.error) reported = e.errorDetail?.message ?? e.error;
          else onProgress(e);
        },
      );
    });
  }

  async imageExists(ref: string): Promise<boolean> {
    try {
      // dockerode's image inspect hands no signal on: the request is made here, with one.
      const path = `/images/${imageRef(ref)}/json`;
      await this.call('image.inspect', this.read, (abortSignal) => this.get(path, abortSignal, { 404: 'no such image' }));
      return true;
    } catch (err) {
      if (err instanceof DockerError && err.isNotFound) return false;
      throw err;
    }
  }

  // ---- networks ----

  async listNetworks(namePrefix?: string): Promise<{ id: string; name: string }[]> {
    const list = await this.call('network.list', this.read, (abortSignal) =>
      this.docker.listNetworks({ ...(namePrefix ? { filters: { name: [namePrefix] } } : {}), abortSignal }),
    );
    return list.filter((n) => !namePrefix || n.Name.startsWith(namePrefix)).map((n) => ({ id: n.Id, name: n.Name }));
  }

  /** Inspect, not list: only an inspect reports the containers attached to a network (W-G1). */
  async inspectNetwork(idOrName: string): Promise<NetworkDetails> {
    // dockerode's network inspect hands no signal on: the request is made here, with one.
    const path = `/networks/${pathRef(idOrName)}`;
    const n = await this.call('network.inspect', this.read, (abortSignal) =>
      this.get<Docker.NetworkInspectInfo>(path, abortSignal, { 404: 'no such network' }),
    );
    const containers = Object.entries((n.Containers ?? {}) as Record<string, { Name: string; IPv4Address?: string }>).map(([id, c]) => ({
      id,
      name: c.Name,
      ipv4: (c.IPv4Address ?? '').split('/')[0],
    }));
    return {
      id: n.Id,
      name: n.Name,
      internal: n.Internal === true,
      options: n.Options ?? {},
      labels: n.Labels ?? {},
      containers,
      createdAt: toUnixSeconds(n.Created),
    };
  }

  /** Creates the network unless it exists; returns its id. */
  async ensureNetwork(name: string, opts: NetworkCreateOptions = {}): Promise<string> {
    try {
      return (await this.inspectNetwork(name)).id;
    } catch (err) {
      if (!(err instanceof DockerError && err.isNotFound)) throw err;
    }
    try {
      const net = await this.call('network.create', this.change, (abortSignal) =>
        this.docker.createNetwork({
          abortSignal,
          Name: name,
          Driver: 'bridge',
          Internal: opts.internal ?? false,
          Labels: opts.labels,
          Options: opts.options,
          CheckDuplicate: true,
        }),
      );
      return net.id;
    } catch (err) {
      if (err instanceof DockerError && err.status === 409) return (await this.inspectNetwork(name)).id;
      throw err;
    }
  }

  async connectNetwork(network: string, containerId: string): Promise<void> {
    await this.call('network.connect', this.change, (abortSignal) =>
      this.docker.getNetwork(pathRef(network)).connect({ Container: containerId, abortSignal } as Docker.NetworkConnectOptions),
    );
  }

  async disconnectNetwork(network: string, containerId: string, force = false): Promise<void> {
    await this.call('network.disconnect', this.change, (abortSignal) =>
      this.docker.getNetwork(pathRef(network)).disconnect({ Container: containerId, Force: force, abortSignal }),
    );
  }

  async removeNetwork(idOrName: string): Promise<void> {
    await this.call('network.remove', this.change, (abortSignal) => this.docker.getNetwork(pathRef(idOrName)).remove({ abortSignal }));
  }

  // ---- events ----

  /**
   * Opens the engine's event stream. With `until` the engine closes it after replaying the range, so
   * since/until reads a bounded past; without it the stream follows live events until `close()`.
   */
  async streamEvents(opts: EventQuery, onEvent: (e: DockerEvent) => void): Promise<{ done: Promise<void>; close: () => void }> {
    const filters: Record<string, string[]> = {};
    if (opts.labels) filters.label = labelFilters(opts.labels);
    if (opts.types) filters.type = opts.types;
    if (opts.actions) filters.event = opts.actions;
    const stream = (await this.call('events', undefined, () =>
      this.docker.getEvents({
        since: opts.since as number | undefined,
        until: opts.until as number | undefined,
        filters: JSON.stringify(filters) as unknown as Record<string, string[]>,
        ...(opts.signal ? { abortSignal: opts.signal } : {}),
      }),
    )) as unknown as Readable;
    const done = new Promise<void>((resolve, reject) => {
      // One JSON event per line. readline splits the lines and decodes UTF-8 across chunks, and passes on the
      // stream's error; docker-modem's followProgress splits too, but keeps every event it has read, which a
      // stream that follows the engine for days must not.
      const lines = readline.createInterface({ input: stream, crlfDelay: Infinity });
      lines.on('line', (line) => {
        if (line.trim() === '' || stream.destroyed) return;
        const event = parseEvent(line);
        if (event) onEvent(event);
        else stream.destroy(new DockerError('events', undefined, `docker events: a line is not a JSON event: ${line.slice(0, 80)}`));
      });
      lines.on('error', (err) => reject(toDockerError('events', err)));
      stream.on('end', resolve);
      stream.on('close', resolve);
    });
    return { done, close: () => stream.destroy() };
  }

  /** The events in [since, until], read to the end. */
  async readEvents(opts: EventQuery & { since: number | string; until: number | string }): Promise<DockerEvent[]> {
    const events: DockerEvent[] = [];
    const { done } = await this.streamEvents(opts, (e) => events.push(e));
    await done;
    return events;
  }
}

/**
 * docker-modem words a refused streaming request `(HTTP code 500) server error - <the engine's message>` and sets
 * no `json`; the engine's own message alone is what toDockerError puts in the line.
 */
function withStreamCause(err: unknown): unknown {
  const e = err as { message?: string; json?: unknown };
  if (typeof e?.message !== 'string' || e.json) return err;
  return Object.assign(e, { json: { message: e.message.replace(/^\(HTTP code \d+\) [^-]*- /, '').trim() } });
}

/** `repo[:tag]` or `repo@digest` as the pull endpoint takes it: a port in the registry's host is no tag. */
function parseImageRef(ref: string): { repository: string; tag: string } {
  const at = ref.indexOf('@');
  if (at >= 0) return { repository: ref.slice(0, at), tag: ref.slice(at + 1) };
  const colon = ref.lastIndexOf(':');
  if (colon > ref.lastIndexOf('/')) return { repository: ref.slice(0, colon), tag: ref.slice(colon + 1) };
  return { repository: ref, tag: 'latest' };
}

/** One line of the event stream, or undefined when it is not JSON. */
function parseEvent(line: string): DockerEvent | undefined {
  let raw: {
    Type?: string;
    Action?: string;
    Actor?: { ID?: string; Attributes?: Record<string, string> };
    timeNano?: number;
    time?: number;
  };
  try {
    raw = JSON.parse(line);
  } catch {
    return undefined;
  }
  return {
    type: raw.Type ?? '',
    action: raw.Action ?? '',
    id: raw.Actor?.ID ?? '',
    attributes: raw.Actor?.Attributes ?? {},
    timeNano: BigInt(Math.round(raw.timeNano ?? (raw.time ?? 0) * 1e9)),
  };
}

/** The parts of an inspect that say when a container turned unhealthy. */
interface HealthOf {
  State: { Health?: { Status?: string; FailingStreak?: number; Log?: { End?: string; ExitCode?: number }[] } };
  Config?: { Healthcheck?: { Retries?: number } };
}

/** Docker's retries when a health check names none. */
const DEFAULT_HEALTH_RETRIES = 3;

/**
 * When the health check made the container unhealthy: the end of the probe of the current failing streak whose
 * failure reached the check's retries. The log keeps the last 5 probes; a streak longer than that began before them,
 * and the oldest one kept is the latest it can have been. null unless unhealthy with a failing probe in the log.
 */
function unhealthySinceMs(c: HealthOf): number | null {
  const h = c.State.Health;
  const log = h?.Log ?? [];
  const streak = h?.FailingStreak ?? 0;
  if (h?.Status !== 'unhealthy' || streak <= 0 || log.length === 0) return null;
  const retries = c.Config?.Healthcheck?.Retries || DEFAULT_HEALTH_RETRIES;
  const first = Math.max(0, log.length - streak);
  const reached = Math.min(log.length - 1, first + retries - 1);
  const end = log[reached]?.End;
  const ms = end ? Date.parse(end) : NaN;
  return Number.isFinite(ms) ? ms : null;
}

/** Without a TTY the engine frames each chunk with an 8-byte header (stream, 0, 0, 0, size32be). */
function isFramed(buf: Buffer): boolean {
  return buf.length >= 8 && buf[0] <= 2 && buf[1] === 0 && buf[2] === 0 && buf[3] === 0;
}

function ignoreStatus(status: number) {
  return (err: unknown): void => {
    if (err instanceof DockerError && err.status === status) return;
    throw err;
  };
}

/** The last `maxBytes` of a byte stream, without holding the rest. */
class TailBuffer {
  private chunks: Buffer[] = [];
  private bytes = 0;
  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    while (this.bytes - this.chunks[0].length >= this.maxBytes) this.bytes -= this.chunks.shift()!.length;
  }

  text(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.maxBytes)).toString('utf8');
  }
}
