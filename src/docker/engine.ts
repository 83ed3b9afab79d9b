/**
 * What keeper asks of a Docker engine, as a type: the calls host/, events/ and activities/ make, and the plain
 * objects they get back. DockerClient (client.ts) is the one implementation that reaches an engine; code that
 * takes an `Engine` can also be given an in-memory one (test/helpers/memory-engine.ts) in unit tests. Failures
 * are DockerErrors (errors.ts), classified by HTTP status: 404 means gone, anything else is transient.
 */

export type LabelFilter = Record<string, string | true>; // true: the label is present, any value

export interface ContainerSummary {
  id: string;
  name: string; // without the leading '/'
  image: string;
  labels: Record<string, string>;
  state: string; // created | running | restarting | exited | paused | dead | removing
  /** Docker's human text, e.g. `Up 3 minutes (unhealthy)`, `Exited (1) 5 seconds ago`. */
  status: string;
  createdAt: number; // unix seconds
}

export interface ContainerDetails {
  id: string;
  name: string;
  image: string;
  labels: Record<string, string>;
  status: string;
  exitCode: number;
  health: string; // '' when the image has no HEALTHCHECK
  /**
   * While `unhealthy`: when the health check made it so (unix ms), the end of the probe whose failure reached its
   * retries, as the engine's health log (its last 5 probes) tells; null when healthy, or when the log no longer says.
   */
  unhealthySinceMs: number | null;
  restartCount: number;
  /** The main process's pid on the host, 0 when not running (benchmarks crash it the way the kernel would). */
  pid: number;
  startedAt: number; // unix seconds, 0 when never started
  finishedAt: number;
  /** The same two times to the millisecond (crash forensics: logs up to a death); null when never. */
  startedAtMs: number | null;
  finishedAtMs: number | null;
  /** The last exit's OOM kill: it survives a restart by the restart policy (ExitCode then reads 0 again). */
  oomKilled: boolean;
  /** The engine's error for the last start or exit, '' when none. */
  error: string;
  /** HostConfig.RestartPolicy.Name: '' or no, always, unless-stopped, on-failure. */
  restartPolicy: string;
  createdAt: number;
  mounts: { type: string; name?: string; destination: string }[];
  networks: string[];
  /** HostConfig.Runtime: the runtime it was created under (the engine records its default when none was asked). */
  runtime: string;
}

export interface ContainerSpec {
  name: string;
  image: string;
  cmd?: string[];
  env?: Record<string, string>;
  labels?: Record<string, string>;
  restartPolicy?: 'no' | 'unless-stopped' | 'always' | 'on-failure';
  network?: string;
  volumes?: { name: string; target: string }[];
  memoryBytes?: number;
  nanoCpus?: number;
  healthcheck?: { cmd: string[]; intervalMs: number; timeoutMs?: number; retries?: number; startPeriodMs?: number };
  init?: boolean;
  workingDir?: string;
  /**
   * ah's confinement of tenant code (the same for services, environments and pool containers); services also get a read-only root filesystem. A tenant
   * container always names its runtime (HostConfig.Runtime): it never falls to the engine's default by omission.
   */
  confined?: { readonlyRootfs: boolean; runtime: string };
}

export interface VolumeSummary {
  name: string;
  labels: Record<string, string>;
  createdAt: number; // unix seconds; 0 when the engine did not say
}

export interface NetworkDetails {
  id: string;
  name: string;
  internal: boolean;
  /** The driver's options, e.g. `com.docker.network.bridge.enable_icc`. */
  options: Record<string, string>;
  labels: Record<string, string>;
  containers: { id: string; name: string; ipv4: string }[];
  createdAt: number; // unix seconds; 0 when the engine did not say
}

/** A container as the list reports it, with what it uses: image, networks and mounted volumes. */
export interface ContainerUsage {
  id: string;
  name: string;
  state: string;
  /** Docker's human text, as ContainerSummary's: a usage is a summary with what the container uses. */
  status: string;
  labels: Record<string, string>;
  image: string; // the reference it was created from
  imageId: string;
  createdAt: number;
  networks: string[];
  volumes: string[];
}

export interface ImageSummary {
  id: string;
  labels: Record<string, string>;
  createdAt: number;
}

/** One line of an image pull's progress, as the engine streams it. */
export interface PullProgressEvent {
  id?: string;
  status?: string;
  progressDetail?: { current?: number; total?: number };
  error?: string;
}

/** An image listed under a repository prefix: its tags and registry digests (RepoTags may be empty: untagged). */
export interface RepoImageSummary {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  createdAt: number;
}

export interface DockerEvent {
  type: string; // container | network | volume | image ...
  action: string; // die | start | health_status: unhealthy | oom | destroy ...
  id: string;
  attributes: Record<string, string>;
  timeNano: bigint;
}

export interface EngineInfo {
  serverVersion: string;
  apiVersion: string;
  dockerRootDir: string;
  containers: number;
  containersRunning: number;
}

/** The OCI runtimes an engine lists (`docker info` → Runtimes) and the one it uses when a container names none. */
export interface EngineRuntimes {
  names: string[];
  defaultRuntime: string;
  /** Each runtime's extra arguments as registered (daemon.json `runtimeArgs`), e.g. runsc's `--network=none`. */
  args: Record<string, string[]>;
}

/** A window of a container's output, and the bounds of reading it (see DockerClient.containerLogsBetween). */
export interface LogWindow {
  sinceMs: number;
  untilMs: number;
}

export interface LogReadLimits {
  keepBytes: number;
  maxReadBytes: number;
  timeoutMs: number;
}

/** Which events to read or follow; `since`/`until` are unix seconds (a number or decimal text). */
export interface EventQuery {
  since?: number | string;
  until?: number | string;
  labels?: LabelFilter;
  types?: string[];
  actions?: string[];
  /** Aborts the request: while connecting (a hung engine) or, later, the open stream. */
  signal?: AbortSignal;
}

export interface NetworkCreateOptions {
  internal?: boolean;
  labels?: Record<string, string>;
  options?: Record<string, string>;
}

/**
 * The engine calls keeper makes. Each one either answers or throws a DockerError, and none waits forever: a call the
 * engine leaves unanswered past its deadline (src/docker/client.ts, EngineDeadlines) fails with a DockerTimeout,
 * transient like every failure but a 404.
 */
export interface Engine {
  /** `host:port` of an engine reached over TCP, whose disk this process cannot see; undefined for a local one. */
  readonly remoteAddress?: string | undefined;
  /** Whether the engine answers at all (a command asks before it tells an operator anything of it). */
  ping(): Promise<void>;
  info(): Promise<EngineInfo>;
  runtimes(): Promise<EngineRuntimes>;

  listContainers(labels: LabelFilter, opts?: { all?: boolean }): Promise<ContainerSummary[]>;
  listContainerUsage(): Promise<ContainerUsage[]>;
  inspectContainer(idOrName: string): Promise<ContainerDetails>;
  createContainer(spec: ContainerSpec): Promise<string>;
  /** Starts a stopped container: true; false when it was running already (the engine's 304, not an error). */
  startContainer(id: string): Promise<boolean>;
  stopContainer(id: string, graceSeconds?: number): Promise<void>;
  restartContainer(id: string, graceSeconds?: number): Promise<void>;
  removeContainer(id: string, opts?: { force?: boolean }): Promise<void>;
  renameContainer(id: string, name: string): Promise<void>;
  containerLogs(id: string, tail?: number): Promise<string>;
  containerLogsBetween(id: string, window: LogWindow, limits: LogReadLimits): Promise<{ text: string; complete: boolean }>;

  createVolume(name: string, labels?: Record<string, string>): Promise<void>;
  listVolumes(namePrefix?: string): Promise<VolumeSummary[]>;
  removeVolume(name: string): Promise<void>;

  listDanglingImages(): Promise<ImageSummary[]>;
  /** Images with a tag or registry digest under `repoPrefix` (e.g. ah's `127.0.0.1:5000/ah/`), tagged or not. */
  listImagesUnder(repoPrefix: string): Promise<RepoImageSummary[]>;
  removeImage(ref: string): Promise<void>;
  imageExists(ref: string): Promise<boolean>;
  /** Pulls an image with no credentials, telling `onProgress` each progress line; fails with the engine's or registry's error. */
  pullImage(ref: string, onProgress: (e: PullProgressEvent) => void, signal?: AbortSignal): Promise<void>;

  listNetworks(namePrefix?: string): Promise<{ id: string; name: string }[]>;
  inspectNetwork(idOrName: string): Promise<NetworkDetails>;
  ensureNetwork(name: string, opts?: NetworkCreateOptions): Promise<string>;
  connectNetwork(network: string, containerId: string): Promise<void>;
  disconnectNetwork(network: string, containerId: string, force?: boolean): Promise<void>;
  removeNetwork(idOrName: string): Promise<void>;

  streamEvents(opts: EventQuery, onEvent: (e: DockerEvent) => void): Promise<{ done: Promise<void>; close: () => void }>;
  readEvents(opts: EventQuery & { since: number | string; until: number | string }): Promise<DockerEvent[]>;
}
