/**
 * A TEST DOUBLE of the Docker engine: an in-memory `Engine` (src/docker/engine.ts) for the millisecond tests of
 * host/'s rules (test/host/). It is not Docker. It keeps containers, networks, volumes, images and events in maps,
 * runs no process, and moves a container between states only when a call or the test says so: no restart policy
 * and no health check act by themselves (`die`, `setHealth` play what the engine would do, at the test's clock).
 * A restart by the restart policy comes at once, unless `restartBackoff` is set: then it comes after Docker's
 * restart delay (`restarting` until the test's clock passes it). Like the engine, it keeps only its last 256
 * events (`EVENTS_KEPT`).
 * It fails as keeper's adapter (DockerClient) reports failures: a DockerError carrying the engine's HTTP status
 * (404 gone, 409 conflict, 403 refused, 400 a malformed id the adapter refuses), and, when told to (`fail`), a
 * transient error or a 404 for any call. Told to (`wedge`), it answers nothing until `release`, and each call
 * fails once its deadline (`deadlineMs`) passes, with the DockerTimeout the adapter throws (an event stream or a pull,
 * which their callers bound, waits for the release or its signal). Besides its containers' events it records volumes' create and destroy;
 * other objects' events are not played.
 * What it assumes about Docker is the Engine contract (test/engine/contract.ts), which runs against this double
 * and against a real engine: a behaviour of Docker that keeper relies on belongs there, and this double follows it.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import { WORKER_DEADLINES } from '../../src/docker/client';
import { DockerError, DockerTimeout } from '../../src/docker/errors';
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
} from '../../src/docker/engine';
import { systemClock, type Clock } from '../../src/time';

export interface MemoryContainer {
  id: string;
  name: string;
  image: string;
  imageId: string;
  labels: Record<string, string>;
  /** created | running | restarting | exited | paused | dead */
  state: string;
  exitCode: number;
  health: string;
  /** When setHealth made it unhealthy (its health log's failing probe); null otherwise. */
  unhealthySinceMs: number | null;
  hasHealthcheck: boolean;
  restartCount: number;
  startedAtMs: number | null;
  finishedAtMs: number | null;
  oomKilled: boolean;
  error: string;
  restartPolicy: string;
  createdAtMs: number;
  runtime: string;
  /** While `restarting`: when the restart policy starts it again (restartBackoff); null otherwise. */
  restartAtMs: number | null;
  /** The restart manager's current delay (0: none yet, or reset by a run of 10 s or more). */
  restartDelayMs: number;
  /** Names of the networks it is configured on (attached while it runs). */
  networks: Set<string>;
  mounts: { name: string; destination: string }[];
  output: { atMs: number; text: string }[];
  /** What the list still shows of it after a death (listLagsDeaths), until it is inspected. */
  listedAs?: ListedState;
}

/** The fields of a container the list reads (state, times, health, restarts). */
type ListedState = Pick<MemoryContainer, 'state' | 'exitCode' | 'health' | 'restartCount' | 'startedAtMs' | 'finishedAtMs'>;

interface MemoryNetwork {
  id: string;
  name: string;
  internal: boolean;
  options: Record<string, string>;
  labels: Record<string, string>;
  createdAtMs: number;
}

interface MemoryImage {
  id: string;
  tags: string[];
  labels: Record<string, string>;
  createdAtMs: number;
}

/** A failure to inject: calls of `operation` (the adapter's names, e.g. `container.inspect`) on `ref` fail. */
export interface InjectedFailure {
  /** The engine's HTTP status; undefined: no answer at all (refused connection), as when the engine is down. */
  status?: number;
  /** Only calls on this id or name (the call's first argument); any when absent. */
  ref?: string;
  /** How many calls fail; every one until `clearFailures()` when absent. */
  times?: number;
}

/** The engine keeps this many events in memory (moby's events buffer), none from before its own start. */
export const EVENTS_KEPT = 256;

/** Docker's restart manager (moby `restartmanager`): 100 ms, doubled after each run under 10 s, at most 1 min. */
function nextRestartDelayMs(currentMs: number, runMs: number): number {
  const from = runMs >= 10_000 ? 0 : currentMs;
  return Math.min(from === 0 ? 100 : from < 60_000 ? from * 2 : from, 60_000);
}

const newId = () => crypto.randomBytes(32).toString('hex');

/**
 * What keeper's adapter refuses (400) before asking the engine: an id or name Docker could never have made, or an
 * image reference with an empty or dot-dot path segment. By operation; the call's first argument is the ref.
 */
const WELL_FORMED: Record<string, (ref: string) => boolean> = {};
const isPathRef = (ref: string) => /^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(ref);
const isImageRef = (ref: string) => /^[A-Za-z0-9][A-Za-z0-9_.:@/-]*$/.test(ref) && !ref.split('/').some((p) => p === '' || p === '..');
for (const op of ['inspect', 'start', 'stop', 'restart', 'remove', 'rename', 'logs']) WELL_FORMED[`container.${op}`] = isPathRef;
for (const op of ['volume.remove', 'network.inspect', 'network.create', 'network.connect', 'network.disconnect', 'network.remove'])
  WELL_FORMED[op] = isPathRef;
for (const op of ['image.remove', 'image.inspect', 'image.pull']) WELL_FORMED[op] = isImageRef;

const sec = (ms: number | null) => (ms === null ? 0 : Math.floor(ms / 1000));
const normalTag = (ref: string) => (/:[^/]+$/.test(ref) || ref.includes('@') ? ref : `${ref}:latest`);
const notFound = (op: string, what: string) => new DockerError(op, 404, `docker ${op}: HTTP 404: No such ${what}`);
const conflict = (op: string, why: string) => new DockerError(op, 409, `docker ${op}: HTTP 409: ${why}`);

function matchesLabels(labels: Record<string, string>, filter: LabelFilter | undefined): boolean {
  return Object.entries(filter ?? {}).every(([k, v]) => (v === true ? k in labels : labels[k] === v));
}

/**
 * Docker's HumanDuration (github.com/docker/go-units v0.5.0, duration.go), which the list's Status text carries and
 * policy/container-status.ts reads, line for line: seconds and minutes truncate, hours round half up
 * (`int(d.Hours() + 0.5)`) and days, weeks and months are whole parts of those rounded hours; years truncate again.
 */
export function humanDuration(seconds: number): string {
  const d = Math.max(0, seconds);
  const s = Math.floor(d);
  const m = Math.floor(d / 60);
  const h = Math.floor(d / 3600 + 0.5);
  if (s < 1) return 'Less than a second';
  if (s === 1) return '1 second';
  if (s < 60) return `${s} seconds`;
  if (m === 1) return 'About a minute';
  if (m < 60) return `${m} minutes`;
  if (h === 1) return 'About an hour';
  if (h < 48) return `${h} hours`;
  if (h < 24 * 7 * 2) return `${Math.floor(h / 24)} days`;
  if (h < 24 * 30 * 2) return `${Math.floor(h / 24 / 7)} weeks`;
  if (h < 24 * 365 * 2) return `${Math.floor(h / 24 / 30)} months`;
  return `${Math.floor(Math.floor(d / 3600) / 24 / 365)} years`;
}

/** The fields the list shows of a container now. */
function listedState(c: MemoryContainer): ListedState {
  return {
    state: c.state,
    exitCode: c.exitCode,
    health: c.health,
    restartCount: c.restartCount,
    startedAtMs: c.startedAtMs,
    finishedAtMs: c.finishedAtMs,
  };
}

export class MemoryEngine implements Engine {
  readonly containers = new Map<string, MemoryContainer>();
  readonly networks = new Map<string, MemoryNetwork>();
  readonly volumes = new Map<string, { name: string; labels: Record<string, string>; createdAtMs: number }>();
  readonly images = new Map<string, MemoryImage>();
  readonly events: DockerEvent[] = [];
  /** Calls made, by the adapter's operation names (as DockerClient.calls counts them). */
  readonly calls = new Map<string, number>();
  engineRuntimes: EngineRuntimes = { names: ['runc'], defaultRuntime: 'runc', args: {} };
  /** Restarts by the restart policy wait Docker's restart delay, as the engine's do; false: they come at once. */
  restartBackoff = false;
  /**
   * The list lags a death, as Docker's does: it sends `die` before its list shows the death (the list is a copy the
   * engine updates once its exit handler is done, tens of ms later), while an inspect waits for that handler. With
   * this on, the list shows a container as it was before its death until the container is next inspected.
   */
  listLagsDeaths = false;
  dockerRootDir = os.tmpdir();
  private failures: (InjectedFailure & { operation: string })[] = [];
  private listeners = new Set<(e: DockerEvent) => void>();
  /** Open streams that deliver nothing more (silenceStreams). */
  private silenced = new Set<(e: DockerEvent) => void>();
  /** Streams opened from now on replay what they are asked for, then deliver nothing live (silenceStreams alsoNew). */
  private silenceNew = false;
  /** How long a call waits on a wedged engine before it fails, as the adapter's reads do (EngineDeadlines.readMs). */
  deadlineMs = WORKER_DEADLINES.readMs;
  /** Settles at `release`, while wedged. */
  private wedged: { released: Promise<void>; release: () => void } | undefined;

  constructor(private readonly clock: Clock = systemClock) {
    for (const name of ['bridge', 'host', 'none']) this.addNetwork(name, {});
  }

  // ---- what tests set up and play ----

  /** Makes calls of `operation` fail (see InjectedFailure); a 404 reads as "gone", anything else as transient. */
  fail(operation: string, how: InjectedFailure = {}): void {
    this.failures.push({ operation, ...how });
  }

  clearFailures(): void {
    this.failures = [];
  }

  /** A wedged engine: it takes every call and answers none until `release` (see the class's comment). */
  wedge(): void {
    if (this.wedged) return;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    this.wedged = { released, release };
  }

  /** The engine answers again: the calls it held go on, as a real one's would once it wakes. */
  release(): void {
    this.wedged?.release();
    this.wedged = undefined;
  }

  /** An image, tagged (`ref`) or dangling (`ref` null). Returns its id. */
  addImage(ref: string | null, opts: { labels?: Record<string, string>; createdAtMs?: number } = {}): string {
    const id = `sha256:${newId()}`;
    this.images.set(id, {
      id,
      tags: ref ? [normalTag(ref)] : [],
      labels: opts.labels ?? {},
      createdAtMs: opts.createdAtMs ?? this.clock.nowMs(),
    });
    return id;
  }

  /** A container by full id, name or unique id prefix; throws when there is none. */
  container(ref: string): MemoryContainer {
    this.startDueRestarts();
    const c = this.findContainer(ref);
    if (!c) throw new Error(`memory engine: no container ${ref}`);
    return c;
  }

  /**
   * The main process of a running container ends (exit code, or the kernel's OOM kill). With `restarted` (by
   * default what its restart policy does) the engine starts it again at once: RestartCount goes up and ExitCode
   * reads 0 again; otherwise it stays exited.
   */
  /**
   * dockerd restarted (without live-restore): its shutdown stops every running container (its own kill and die), its
   * events are gone (it keeps them in memory only), its default `bridge` network is made anew (a new id, created now:
   * its start), and each container that ran under a policy that restarts every exit is started again, with
   * RestartCount back at 0. Advance the clock between the two to place the outage.
   */
  restartEngine(): void {
    const policy = new Set(['always', 'unless-stopped']);
    const brought = [...this.containers.values()].filter(
      (c) => (c.state === 'running' || c.state === 'restarting') && policy.has(c.restartPolicy),
    );
    for (const c of this.containers.values()) this.stop(c, 'stop');
    this.events.splice(0);
    const bridge = this.findNetwork('bridge');
    if (bridge) this.networks.delete(bridge.id);
    this.addNetwork('bridge', {});
    for (const c of brought) {
      Object.assign(c, { state: 'running', exitCode: 0, startedAtMs: this.clock.nowMs(), restartCount: 0, restartDelayMs: 0 });
      Object.assign(c, { health: c.hasHealthcheck ? 'starting' : '', restartAtMs: null });
      this.emit(c, 'start');
    }
  }

  die(ref: string, opts: { exitCode?: number; oomKilled?: boolean; restarted?: boolean } = {}): void {
    const c = this.container(ref);
    const exitCode = opts.exitCode ?? (opts.oomKilled ? 137 : 1);
    const now = this.clock.nowMs();
    if (this.listLagsDeaths) c.listedAs ??= listedState(c);
    if (opts.oomKilled) this.emit(c, 'oom');
    this.emit(c, 'die', { exitCode: String(exitCode) });
    const runMs = now - (c.startedAtMs ?? now);
    Object.assign(c, {
      state: 'exited',
      exitCode,
      oomKilled: opts.oomKilled ?? false,
      finishedAtMs: now,
      health: c.hasHealthcheck ? 'unhealthy' : '',
    });
    const policyRestarts =
      c.restartPolicy === 'always' || c.restartPolicy === 'unless-stopped' || (c.restartPolicy === 'on-failure' && exitCode !== 0);
    if (!(opts.restarted ?? policyRestarts)) return;
    if (this.restartBackoff) {
      // The engine counts the restart at the death, and starts the container once the delay has passed.
      c.restartDelayMs = nextRestartDelayMs(c.restartDelayMs, runMs);
      Object.assign(c, { state: 'restarting', restartCount: c.restartCount + 1, restartAtMs: now + c.restartDelayMs });
      return;
    }
    Object.assign(c, {
      state: 'running',
      exitCode: 0,
      restartCount: c.restartCount + 1,
      startedAtMs: now,
      health: c.hasHealthcheck ? 'starting' : '',
    });
    this.emit(c, 'start');
  }

  /**
   * What an engine restart does to the event history: the engine keeps no event from before its own start. (The
   * containers it stops and starts again on the way are not played.)
   */
  dropEventHistory(): void {
    this.events.length = 0;
  }

  /** The health check's verdict changes (`healthy`, `unhealthy`, `starting`). */
  setHealth(ref: string, health: string): void {
    const c = this.container(ref);
    c.unhealthySinceMs = health === 'unhealthy' ? (c.health === 'unhealthy' ? c.unhealthySinceMs : this.clock.nowMs()) : null;
    c.health = health;
    this.emit(c, `health_status: ${health}`);
  }

  /** A line of the container's output, written now. */
  write(ref: string, text: string): void {
    this.container(ref).output.push({ atMs: this.clock.nowMs(), text });
  }

  // ---- engine ----

  async ping(): Promise<void> {
    return this.call('ping', undefined, () => undefined);
  }

  async info(): Promise<EngineInfo> {
    return this.call('info', undefined, () => ({
      serverVersion: 'memory',
      apiVersion: '1.41',
      dockerRootDir: this.dockerRootDir,
      containers: this.containers.size,
      containersRunning: [...this.containers.values()].filter((c) => c.state === 'running').length,
    }));
  }

  /** The containers as the list shows them: a death the list lags (listLagsDeaths) not yet. */
  private listed(): MemoryContainer[] {
    return [...this.containers.values()].map((c) => (c.listedAs ? { ...c, ...c.listedAs } : c));
  }

  async runtimes(): Promise<EngineRuntimes> {
    return this.call('info', undefined, () => structuredClone(this.engineRuntimes));
  }

  // ---- containers ----

  async listContainers(labels: LabelFilter, opts: { all?: boolean } = {}): Promise<ContainerSummary[]> {
    return this.call('container.list', undefined, () =>
      this.listed()
        .filter((c) => matchesLabels(c.labels, labels) && ((opts.all ?? true) ? true : c.state === 'running'))
        .map((c) => ({
          id: c.id,
          name: c.name,
          image: c.image,
          labels: { ...c.labels },
          state: c.state,
          status: this.statusText(c),
          createdAt: sec(c.createdAtMs),
        })),
    );
  }

  async listContainerUsage(): Promise<ContainerUsage[]> {
    return this.call('container.list', undefined, () =>
      this.listed().map((c) => ({
        id: c.id,
        name: c.name,
        state: c.state,
        status: this.statusText(c),
        labels: { ...c.labels },
        image: c.image,
        imageId: c.imageId,
        createdAt: sec(c.createdAtMs),
        networks: [...c.networks],
        volumes: c.mounts.map((m) => m.name),
      })),
    );
  }

  async inspectContainer(idOrName: string): Promise<ContainerDetails> {
    return this.call('container.inspect', idOrName, () => {
      const c = this.mustContainer('container.inspect', idOrName);
      delete c.listedAs;
      return this.details(c);
    });
  }

  async createContainer(spec: ContainerSpec): Promise<string> {
    return this.call('container.create', spec.name, () => {
      if (this.findByName(spec.name)) throw conflict('container.create', `Conflict. The container name "/${spec.name}" is already in use`);
      const image = this.findImage(spec.image);
      if (!image) throw notFound('container.create', `image: ${spec.image}`);
      const runtime = spec.confined?.runtime ?? this.engineRuntimes.defaultRuntime;
      if (!this.engineRuntimes.names.includes(runtime))
        throw new DockerError('container.create', 400, `docker container.create: HTTP 400: unknown or invalid runtime name: ${runtime}`);
      // A network that does not exist is the start's failure, not the create's (Docker checks it at the start).
      const network = spec.network ?? 'bridge';
      for (const v of spec.volumes ?? []) this.addVolume(v.name, {});
      const c: MemoryContainer = {
        id: newId(),
        name: spec.name,
        image: spec.image,
        imageId: image.id,
        labels: { ...spec.labels },
        state: 'created',
        exitCode: 0,
        health: '',
        unhealthySinceMs: null,
        hasHealthcheck: !!spec.healthcheck,
        restartCount: 0,
        startedAtMs: null,
        finishedAtMs: null,
        oomKilled: false,
        error: '',
        restartPolicy: spec.restartPolicy ?? 'no',
        createdAtMs: this.clock.nowMs(),
        runtime,
        restartAtMs: null,
        restartDelayMs: 0,
        networks: new Set([this.findNetwork(network)?.name ?? network]),
        mounts: (spec.volumes ?? []).map((v) => ({ name: v.name, destination: v.target })),
        output: [],
      };
      this.containers.set(c.id, c);
      this.emit(c, 'create');
      return c.id;
    });
  }

  async startContainer(id: string): Promise<boolean> {
    return this.call('container.start', id, () => {
      const c = this.mustContainer('container.start', id);
      if (c.state === 'running') return false; // the engine's 304, which the adapter answers with false
      const missing = [...c.networks].find((n) => !this.findNetwork(n));
      if (missing !== undefined) {
        c.error = `network ${missing} not found`;
        throw new DockerError('container.start', 404, `docker container.start: HTTP 404: ${c.error}`);
      }
      // A manual start resets the restart manager: RestartCount and the restart delay start over.
      Object.assign(c, {
        state: 'running',
        exitCode: 0,
        oomKilled: false,
        error: '',
        startedAtMs: this.clock.nowMs(),
        health: c.hasHealthcheck ? 'starting' : '',
        restartCount: 0,
        restartDelayMs: 0,
      });
      this.emit(c, 'start');
      return true;
    });
  }

  /** A stopped container answers 143: SIGTERM ended it within the grace period. */
  async stopContainer(id: string, _graceSeconds = 10): Promise<void> {
    return this.call('container.stop', id, () => this.stop(this.mustContainer('container.stop', id), 'stop'));
  }

  async restartContainer(id: string, _graceSeconds = 10): Promise<void> {
    return this.call('container.restart', id, () => {
      const c = this.mustContainer('container.restart', id);
      this.stop(c, 'stop');
      Object.assign(c, {
        state: 'running',
        exitCode: 0,
        startedAtMs: this.clock.nowMs(),
        health: c.hasHealthcheck ? 'starting' : '',
        restartCount: 0,
        restartDelayMs: 0,
      });
      this.emit(c, 'start');
      this.emit(c, 'restart');
    });
  }

  async removeContainer(id: string, opts: { force?: boolean } = {}): Promise<void> {
    return this.call('container.remove', id, () => {
      const c = this.mustContainer('container.remove', id);
      if (c.state === 'running' && !opts.force)
        throw conflict(
          'container.remove',
          `You cannot remove a running container ${c.id}. Stop the container before attempting removal or force remove`,
        );
      this.stop(c, 'kill');
      this.containers.delete(c.id);
      this.emit(c, 'destroy');
    });
  }

  async renameContainer(id: string, name: string): Promise<void> {
    return this.call('container.rename', id, () => {
      const c = this.mustContainer('container.rename', id);
      if (c.name === name)
        throw new DockerError(
          'container.rename',
          400,
          'docker container.rename: HTTP 400: Renaming a container with the same name as its current name',
        );
      const other = this.findByName(name);
      if (other && other !== c) throw conflict('container.rename', `Conflict. The container name "/${name}" is already in use`);
      c.name = name;
      this.emit(c, 'rename');
    });
  }

  async containerLogs(id: string, tail = 100): Promise<string> {
    return this.call('container.logs', id, () => {
      const lines = this.mustContainer('container.logs', id).output.map((o) => o.text);
      return lines
        .slice(-tail)
        .map((l) => `${l}\n`)
        .join('');
    });
  }

  async containerLogsBetween(id: string, window: LogWindow, limits: LogReadLimits): Promise<{ text: string; complete: boolean }> {
    return this.call('container.logs', id, () => {
      const c = this.mustContainer('container.logs', id);
      const text = c.output
        .filter((o) => o.atMs >= window.sinceMs && o.atMs <= window.untilMs)
        .map((o) => `${o.text}\n`)
        .join('');
      const bytes = Buffer.from(text, 'utf8');
      if (bytes.length > limits.maxReadBytes) return { text: '', complete: false };
      return { text: bytes.subarray(Math.max(0, bytes.length - limits.keepBytes)).toString('utf8'), complete: true };
    });
  }

  // ---- volumes ----

  async createVolume(name: string, labels: Record<string, string> = {}): Promise<void> {
    return this.call('volume.create', name, () => this.addVolume(name, labels));
  }

  async listVolumes(namePrefix?: string): Promise<VolumeSummary[]> {
    return this.call('volume.list', undefined, () =>
      [...this.volumes.values()]
        .filter((v) => !namePrefix || v.name.startsWith(namePrefix))
        .map((v) => ({ name: v.name, labels: { ...v.labels }, createdAt: sec(v.createdAtMs) })),
    );
  }

  async removeVolume(name: string): Promise<void> {
    return this.call('volume.remove', name, () => {
      if (!this.volumes.has(name)) throw notFound('volume.remove', `volume: ${name}`);
      const user = [...this.containers.values()].find((c) => c.mounts.some((m) => m.name === name));
      if (user) throw conflict('volume.remove', `remove ${name}: volume is in use - [${user.id}]`);
      this.volumes.delete(name);
      this.record({ type: 'volume', action: 'destroy', id: name, attributes: { driver: 'local' } });
    });
  }

  // ---- images ----

  async listDanglingImages(): Promise<ImageSummary[]> {
    return this.call('image.list', undefined, () =>
      [...this.images.values()]
        .filter((i) => i.tags.length === 0)
        .map((i) => ({ id: i.id, labels: { ...i.labels }, createdAt: sec(i.createdAtMs) })),
    );
  }

  /**
   * Tagged images under the prefix only: the in-memory engine keeps no registry digests. Docker's reference filter
   * (`<prefix>*`, a path pattern) matches no `/` after the prefix: a repository in a folder below it is not listed.
   */
  async listImagesUnder(repoPrefix: string): Promise<RepoImageSummary[]> {
    return this.call('image.list', undefined, () =>
      [...this.images.values()]
        .filter((i) => i.tags.some((t) => t.startsWith(repoPrefix) && !t.slice(repoPrefix.length).includes('/')))
        .map((i) => ({ id: i.id, repoTags: [...i.tags], repoDigests: [], createdAt: sec(i.createdAtMs) })),
    );
  }

  /** By tag: untags, and removes the image with its last tag. By id: removes it. Refused (409) while a container uses it. */
  async removeImage(ref: string): Promise<void> {
    return this.call('image.remove', ref, () => {
      const image = this.findImage(ref);
      if (!image) throw notFound('image.remove', `image: ${ref}`);
      const byTag = image.tags.includes(normalTag(ref));
      if (byTag && image.tags.length > 1) return void (image.tags = image.tags.filter((t) => t !== normalTag(ref)));
      if (!byTag && image.tags.length > 1)
        throw conflict('image.remove', `unable to delete ${image.id} (must be forced) - image is referenced in multiple repositories`);
      const user = [...this.containers.values()].find((c) => c.imageId === image.id);
      if (user)
        throw conflict(
          'image.remove',
          `unable to delete ${image.id} (cannot be forced) - image is being used by running container ${user.id}`,
        );
      this.images.delete(image.id);
    });
  }

  async imageExists(ref: string): Promise<boolean> {
    return this.call('image.inspect', ref, () => this.findImage(ref) !== undefined);
  }

  /**
   * Refs a pull finds, as if a registry held them (`publish`); any other ref is the registry's 404. A pull adds
   * the image with one progress line, at once: the real engine's streaming is the integration tier's (test/pool/pull.test.ts).
   */
  readonly registry = new Set<string>();

  publish(ref: string): void {
    this.registry.add(normalTag(ref));
  }

  async pullImage(ref: string, onProgress: (e: PullProgressEvent) => void): Promise<void> {
    return this.call('image.pull', ref, () => {
      if (!this.registry.has(normalTag(ref)))
        throw notFound('image.pull', `manifest for ${ref} not found: manifest unknown: manifest unknown`);
      onProgress({ id: 'layer0', status: 'Pull complete' });
      if (!this.findImage(ref)) this.addImage(ref);
    });
  }

  // ---- networks ----

  async listNetworks(namePrefix?: string): Promise<{ id: string; name: string }[]> {
    return this.call('network.list', undefined, () =>
      [...this.networks.values()].filter((n) => !namePrefix || n.name.startsWith(namePrefix)).map((n) => ({ id: n.id, name: n.name })),
    );
  }

  /** Only running containers are attached (have an endpoint); a stopped one is configured on it, not attached. */
  async inspectNetwork(idOrName: string): Promise<NetworkDetails> {
    return this.call('network.inspect', idOrName, () => {
      const n = this.findNetwork(idOrName);
      if (!n) throw notFound('network.inspect', `network ${idOrName}`);
      const attached = [...this.containers.values()].filter((c) => c.state === 'running' && c.networks.has(n.name));
      return {
        id: n.id,
        name: n.name,
        internal: n.internal,
        options: { ...n.options },
        labels: { ...n.labels },
        createdAt: sec(n.createdAtMs),
        containers: attached.map((c, i) => ({ id: c.id, name: c.name, ipv4: `172.30.0.${i + 2}` })),
      };
    });
  }

  async ensureNetwork(name: string, opts: NetworkCreateOptions = {}): Promise<string> {
    return this.call('network.create', name, () => (this.findNetwork(name) ?? this.addNetwork(name, opts)).id);
  }

  async connectNetwork(network: string, containerId: string): Promise<void> {
    return this.call('network.connect', network, () => {
      const n = this.findNetwork(network);
      if (!n) throw notFound('network.connect', `network ${network}`);
      const c = this.mustContainer('network.connect', containerId);
      if (c.networks.has(n.name))
        throw new DockerError(
          'network.connect',
          403,
          `docker network.connect: HTTP 403: endpoint with name ${c.name} already exists in network ${n.name}`,
        );
      c.networks.add(n.name);
    });
  }

  /** A container that is not on the network, or a network that does not exist, is the engine's 500, force or not. */
  async disconnectNetwork(network: string, containerId: string, _force = false): Promise<void> {
    return this.call('network.disconnect', network, () => {
      const c = this.mustContainer('network.disconnect', containerId);
      const name = this.findNetwork(network)?.name;
      if (name === undefined || !c.networks.delete(name))
        throw new DockerError(
          'network.disconnect',
          500,
          `docker network.disconnect: HTTP 500: container ${c.id} is not connected to network ${network}`,
        );
    });
  }

  async removeNetwork(idOrName: string): Promise<void> {
    return this.call('network.remove', idOrName, () => {
      const n = this.findNetwork(idOrName);
      if (!n) throw notFound('network.remove', `network ${idOrName}`);
      if ([...this.containers.values()].some((c) => c.state === 'running' && c.networks.has(n.name))) {
        throw new DockerError(
          'network.remove',
          403,
          `docker network.remove: HTTP 403: error while removing network: network ${n.name} id ${n.id} has active endpoints`,
        );
      }
      this.networks.delete(n.id);
    });
  }

  // ---- events ----

  /**
   * With `since`, the recorded events from then in the query's range; without `until`, it then follows new ones
   * until closed (`done` resolves) or the signal aborts (`done` fails with a transient error, as a reset request does).
   */
  async streamEvents(opts: EventQuery, onEvent: (e: DockerEvent) => void): Promise<{ done: Promise<void>; close: () => void }> {
    await this.whileWedged('events', opts.signal);
    return this.call('events', undefined, () => {
      if (opts.signal?.aborted) throw new DockerError('events', undefined, 'docker events: ABORT_ERR: The operation was aborted');
      const wanted = (e: DockerEvent) => eventMatches(e, opts);
      if (opts.since !== undefined) for (const e of this.events) if (wanted(e)) onEvent(e);
      if (opts.until !== undefined) return { done: Promise.resolve(), close: () => undefined };
      let settle!: (err?: DockerError) => void;
      const done = new Promise<void>((resolve, reject) => (settle = (err) => (err ? reject(err) : resolve())));
      const listener = (e: DockerEvent) => wanted(e) && onEvent(e);
      this.listeners.add(listener);
      if (this.silenceNew) this.silenced.add(listener);
      const end = (err?: DockerError) => (this.listeners.delete(listener), settle(err));
      const aborted = () => end(new DockerError('events', undefined, 'docker events: ECONNRESET: aborted'));
      opts.signal?.addEventListener('abort', aborted, { once: true });
      return { done, close: () => end() };
    });
  }

  async readEvents(opts: EventQuery & { since: number | string; until: number | string }): Promise<DockerEvent[]> {
    const events: DockerEvent[] = [];
    const { done } = await this.streamEvents(opts, (e) => events.push(e));
    await done;
    return events;
  }

  // ---- inside ----

  /** Counts the call, applies an injected failure, and runs it as the adapter does: errors as DockerErrors. */
  private async call<T>(operation: string, ref: string | undefined, fn: () => T): Promise<T> {
    if (operation !== 'events' && operation !== 'image.pull') await this.whileWedged(operation);
    this.startDueRestarts();
    this.calls.set(operation, (this.calls.get(operation) ?? 0) + 1);
    if (ref !== undefined && WELL_FORMED[operation]?.(ref) === false)
      throw new DockerError('ref', 400, `docker: refused malformed id or name ${JSON.stringify(ref.slice(0, 70))}`);
    const f = this.failures.find((x) => x.operation === operation && (x.ref === undefined || x.ref === ref));
    if (f) {
      if (f.times !== undefined && --f.times <= 0) this.failures.splice(this.failures.indexOf(f), 1);
      const what = f.status === undefined ? 'ECONNREFUSED' : `HTTP ${f.status}`;
      throw new DockerError(operation, f.status, `docker ${operation}: ${what}: injected by the test`);
    }
    return fn();
  }

  /**
   * While wedged: waits for the release, or fails when the call's deadline passes (a stream or a pull: when its
   * signal aborts), as the adapter's calls fail.
   */
  private async whileWedged(operation: string, signal?: AbortSignal): Promise<void> {
    const wedged = this.wedged;
    if (!wedged) return;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const gaveUp = new Promise<never>((_resolve, reject) => {
      if (operation === 'events' || operation === 'image.pull') {
        onAbort = () => reject(new DockerError(operation, undefined, `docker ${operation}: ABORT_ERR: The operation was aborted`));
        signal?.addEventListener('abort', onAbort, { once: true });
      } else timer = setTimeout(() => reject(new DockerTimeout(operation, this.deadlineMs)), this.deadlineMs);
    });
    try {
      await Promise.race([wedged.released, gaveUp]);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Restarts whose delay has passed on the test's clock happen, each at its own time (restartBackoff). */
  private startDueRestarts(): void {
    const now = this.clock.nowMs();
    for (const c of this.containers.values()) {
      if (c.state !== 'restarting' || c.restartAtMs === null || c.restartAtMs > now) continue;
      Object.assign(c, { state: 'running', exitCode: 0, startedAtMs: c.restartAtMs, health: c.hasHealthcheck ? 'starting' : '' });
      this.emit(c, 'start', {}, c.restartAtMs);
      c.restartAtMs = null;
    }
  }

  /**
   * A stop: SIGTERM, which ends the process within the grace period (143), or a forced remove's SIGKILL (137), which
   * records no `stop`. A container that the restart policy is about to start again has no process: the engine
   * cancels the restart and records only the stop; the crash's exit code and time stay.
   */
  private stop(c: MemoryContainer, how: 'stop' | 'kill'): void {
    if (c.state === 'restarting') {
      Object.assign(c, { state: 'exited', restartAtMs: null });
      if (how === 'stop') this.emit(c, 'stop');
      return;
    }
    if (c.state !== 'running' && c.state !== 'paused') return; // the engine's 304
    const exitCode = how === 'stop' ? 143 : 137;
    this.emit(c, 'kill', { signal: how === 'stop' ? '15' : '9' });
    this.emit(c, 'die', { exitCode: String(exitCode) });
    Object.assign(c, { state: 'exited', exitCode, finishedAtMs: this.clock.nowMs(), health: c.hasHealthcheck ? 'unhealthy' : '' });
    if (how === 'stop') this.emit(c, 'stop');
  }

  private details(c: MemoryContainer): ContainerDetails {
    return {
      id: c.id,
      name: c.name,
      image: c.image,
      labels: { ...c.labels },
      status: c.state,
      exitCode: c.exitCode,
      health: c.health,
      // Set only by a failing probe (setHealth): a stopped container's `unhealthy` has no failing streak in its log.
      unhealthySinceMs: c.health === 'unhealthy' ? c.unhealthySinceMs : null,
      restartCount: c.restartCount,
      pid: c.state === 'running' ? 4242 : 0,
      startedAt: sec(c.startedAtMs),
      finishedAt: sec(c.finishedAtMs),
      startedAtMs: c.startedAtMs,
      finishedAtMs: c.finishedAtMs,
      oomKilled: c.oomKilled,
      error: c.error,
      restartPolicy: c.restartPolicy,
      createdAt: sec(c.createdAtMs),
      mounts: c.mounts.map((m) => ({ type: 'volume', name: m.name, destination: m.destination })),
      networks: [...c.networks],
      runtime: c.runtime,
    };
  }

  /** The list's Status text, as Docker words it: `Up 3 minutes (unhealthy)`, `Exited (1) 5 seconds ago`, `Created`. */
  private statusText(c: MemoryContainer): string {
    const now = this.clock.nowMs();
    const since = (ms: number | null) => humanDuration((now - (ms ?? now)) / 1000);
    const health = c.health && c.health !== 'starting' ? ` (${c.health})` : c.health === 'starting' ? ' (health: starting)' : '';
    if (c.state === 'running') return `Up ${since(c.startedAtMs)}${health}`;
    if (c.state === 'paused') return `Up ${since(c.startedAtMs)} (Paused)`;
    if (c.state === 'exited') return `Exited (${c.exitCode}) ${since(c.finishedAtMs)} ago`;
    if (c.state === 'restarting') return `Restarting (${c.exitCode}) ${since(c.finishedAtMs)} ago`;
    return c.state === 'created' ? 'Created' : 'Dead';
  }

  /** Records a container's event, with its labels, name and image as attributes (see record). */
  private emit(c: MemoryContainer, action: string, extra: Record<string, string> = {}, atMs = this.clock.nowMs()): void {
    this.record({ type: 'container', action, id: c.id, attributes: { ...c.labels, name: c.name, image: c.image, ...extra } }, atMs);
  }

  /** Records an event (at `atMs`, now by default), in time order, keeping only the last EVENTS_KEPT. */
  private record(event: Omit<DockerEvent, 'timeNano'>, atMs = this.clock.nowMs()): void {
    const e: DockerEvent = { ...event, timeNano: BigInt(atMs) * 1_000_000n };
    let at = this.events.length;
    while (at > 0 && this.events[at - 1].timeNano > e.timeNano) at--;
    this.events.splice(at, 0, e);
    if (this.events.length > EVENTS_KEPT) this.events.splice(0, this.events.length - EVENTS_KEPT);
    for (const l of this.listeners) if (!this.silenced.has(l)) l(e);
  }

  /**
   * A half-open event stream (a stuck proxy, a wedged engine thread): the streams open now stay open and deliver
   * nothing more; streams opened later work, and replay what was missed from `since`. With `alsoNew`, streams opened
   * later replay what they ask for and then deliver nothing live either (a proxy that buffers), until restoreStreams.
   */
  silenceStreams(opts: { alsoNew?: boolean } = {}): void {
    for (const l of this.listeners) this.silenced.add(l);
    this.silenceNew = opts.alsoNew ?? false;
  }

  /** Streams opened from now on deliver live events again (those silenced stay so). */
  restoreStreams(): void {
    this.silenceNew = false;
  }

  /** Creates a volume unless it exists (then it stays as it is). */
  private addVolume(name: string, labels: Record<string, string>): void {
    if (this.volumes.has(name)) return;
    this.volumes.set(name, { name, labels: { ...labels }, createdAtMs: this.clock.nowMs() });
    this.record({ type: 'volume', action: 'create', id: name, attributes: { driver: 'local' } });
  }

  private addNetwork(name: string, opts: NetworkCreateOptions): MemoryNetwork {
    const n = {
      id: newId(),
      name,
      internal: opts.internal ?? false,
      options: { ...opts.options },
      labels: { ...opts.labels },
      createdAtMs: this.clock.nowMs(),
    };
    this.networks.set(n.id, n);
    return n;
  }

  private findContainer(ref: string): MemoryContainer | undefined {
    const byId = this.containers.get(ref) ?? this.findByName(ref);
    if (byId) return byId;
    const prefixed = [...this.containers.values()].filter((c) => ref.length > 0 && c.id.startsWith(ref));
    return prefixed.length === 1 ? prefixed[0] : undefined;
  }

  private mustContainer(op: string, ref: string): MemoryContainer {
    const c = this.findContainer(ref);
    if (!c) throw notFound(op, `container: ${ref}`);
    return c;
  }

  private findByName(name: string): MemoryContainer | undefined {
    return [...this.containers.values()].find((c) => c.name === name.replace(/^\//, ''));
  }

  private findNetwork(ref: string): MemoryNetwork | undefined {
    return this.networks.get(ref) ?? [...this.networks.values()].find((n) => n.name === ref || (ref.length >= 12 && n.id.startsWith(ref)));
  }

  private findImage(ref: string): MemoryImage | undefined {
    return (
      this.images.get(ref) ??
      [...this.images.values()].find(
        (i) => i.tags.includes(normalTag(ref)) || (ref.length >= 12 && i.id.replace('sha256:', '').startsWith(ref.replace('sha256:', ''))),
      )
    );
  }
}

/** Docker's event filters: a time range in unix seconds, labels, types and actions (health_status by prefix). */
function eventMatches(e: DockerEvent, q: EventQuery): boolean {
  const ms = Number(e.timeNano / 1_000_000n);
  if (q.since !== undefined && ms < Number(q.since) * 1000) return false;
  if (q.until !== undefined && ms > Number(q.until) * 1000) return false;
  if (q.types && !q.types.includes(e.type)) return false;
  if (q.actions && !q.actions.some((a) => e.action === a || e.action.startsWith(`${a}:`))) return false;
  return matchesLabels(e.attributes, q.labels);
}
