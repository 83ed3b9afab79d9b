/**
 * What Docker did, told apart from what keeper says: the soak follows the engine's own event stream, on the engine's
 * socket (never through keeper's proxy), and reconnects with `since` after a drop, so nothing is lost while dockerd is
 * up. Each service container's events go through a model of Docker's restart bookkeeping (ContainerTruth):
 *
 * - a `die` with the engine's own `kill` of the container up to 15 s before it is a **stop** (an API stop or
 *   restart, or dockerd's shutdown, which stops containers the same way: kill, die, stop): never a crash;
 * - a `die` without one, while dockerd shuts down, is a **death in the shutdown**: the process died by itself, and
 *   whether or not the engine's restart manager still restarted it then, the engine's next start sets RestartCount
 *   back to 0, so keeper sees it only if it looked in time;
 * - any other `die` is a **policy death**: Docker's unless-stopped policy restarts the container and RestartCount
 *   goes up by one (it is up already when the `die` is logged). The model numbers them as RestartCount does: from 0
 *   again after any start that follows a stop (an API start, keeper's recovery, dockerd starting its containers);
 * - `health_status: unhealthy` starts an **unhealthy episode**, which ends at the container's next death, or when the
 *   check passes again by itself (`health_status: healthy`: a probe that timed out on a loaded host).
 *
 * The engine keeps only its last 256 events, none from before its own start: a dockerd restart that starts 200
 * containers overflows them before anyone can connect. So the model is also checked against the engine's own
 * RestartCount (rebaseline): deaths the stream never showed are added as **unseen** (time unknown), and a
 * RestartCount below the model's is reported as a fault of the soak's truth, not of keeper.
 */
import type Dockerode from 'dockerode';
import fs from 'node:fs';
import readline from 'node:readline';
import { toUnixMs } from '../../src/docker/client';

/** The engine's kill comes this close before the die of a stop (dockerd's stop timeout is 10 s). */
export const KILL_BEFORE_DIE_MS = 15_000;
export const WATCHED_ACTIONS = ['die', 'start', 'kill', 'stop', 'restart', 'health_status', 'oom'];

export interface EngineEvent {
  atMs: number;
  timeNano: bigint;
  containerId: string;
  action: string;
  exitCode?: number;
}

export type DeathKind = 'policy' | 'stop' | 'shutdown-self' | 'unseen';

export interface TrueDeath {
  containerId: string;
  kind: DeathKind;
  /** Unix ms of the die event; for an unseen death, when the rebaseline found it (it happened before). */
  atMs: number;
  exitCode?: number;
  /** RestartCount after a policy death, and which run of numbering (a start after a stop begins the next). */
  number?: number;
  epoch: number;
  /** A stop that keeper's restart of an unhealthy container made (a `restart` event followed). */
  restarted?: boolean;
  /**
   * A stop the stream never showed, found by an inspect (dated by FinishedAt): the stream misses nothing while dockerd
   * is up, so it came while dockerd shut down or was away (a container its restart manager started during the
   * shutdown, stopped after dockerd's exit and not started again when it came back: the soak's run G).
   */
  foundByInspect?: boolean;
}

/** What an inspect of a container shows, for checking the model against the engine. */
export interface Inspected {
  restartCount: number;
  /** Running, or restarting (Docker counts a container in its restart backoff as running). */
  running: boolean;
  /** Unix ms of State.StartedAt and State.FinishedAt (0 when never). */
  startedAtMs: number;
  finishedAtMs: number;
  exitCode: number;
}

/** An API stop's end (the engine's `stop` event): also of a container waiting to be restarted, which has no die. */
export interface StopMark {
  atMs: number;
  /** Followed by a `restart` event: keeper's restart of an unhealthy container, not a stop. */
  restarted?: boolean;
}

export interface UnhealthyEpisode {
  containerId: string;
  atMs: number;
  /** The death that ended it, if any: keeper's restart (a stop, restarted) is the expected end. */
  endedBy?: TrueDeath;
  /** The engine's `health_status: healthy` came first: the check passed again by itself (a probe that timed out). */
  healedAtMs?: number;
}

/** One container's events through Docker's restart bookkeeping. */
export class ContainerTruth {
  readonly deaths: TrueDeath[] = [];
  readonly episodes: UnhealthyEpisode[] = [];
  readonly stops: StopMark[] = [];
  /** When an inspect found the container neither running nor restarting. */
  readonly downSeenAtMs: number[] = [];
  /** RestartCount as Docker keeps it, per the model; and whether the next sign of life starts a new numbering. */
  count = 0;
  epoch = 0;
  private resetPending = false;
  /** When the pending reset came (a stop, or dockerd's exit): only a start after it begins a new numbering. */
  private resetAtMs = 0;
  lastEventAtMs = 0;
  /** Whether the model has the container up (its last start after its last death), and since when. */
  private up = true;
  private lastStartMs = 0;
  private lastKillMs: number | undefined;
  private lastStop: TrueDeath | undefined;

  constructor(readonly containerId: string) {}

  apply(e: EngineEvent, inShutdown: (atMs: number) => boolean): void {
    this.lastEventAtMs = Math.max(this.lastEventAtMs, e.atMs);
    switch (e.action) {
      case 'kill':
        this.lastKillMs = e.atMs;
        return;
      case 'stop':
        this.pendReset(e.atMs);
        this.stops.push({ atMs: e.atMs });
        return;
      case 'start':
        this.startNumbering();
        this.up = true;
        this.lastStartMs = Math.max(this.lastStartMs, e.atMs);
        return;
      case 'restart':
        if (this.lastStop) this.lastStop.restarted = true;
        if (this.stops.length > 0) this.stops[this.stops.length - 1].restarted = true;
        return;
      case 'die':
        return this.die(e, inShutdown(e.atMs));
      default:
        if (e.action.startsWith('health_status: unhealthy')) this.episodes.push({ containerId: this.containerId, atMs: e.atMs });
        else if (e.action.startsWith('health_status: healthy')) {
          const open = this.openEpisode();
          if (open) open.healedAtMs = e.atMs;
        }
    }
  }

  private openEpisode(): UnhealthyEpisode | undefined {
    return this.episodes.find((ep) => !ep.endedBy && ep.healedAtMs === undefined);
  }

  /**
   * dockerd exited: whatever the stream showed of its shutdown (a stream can drop before the last stop reaches it),
   * the engine's next start of this container sets RestartCount back to 0.
   */
  engineStopped(atMs: number): void {
    this.pendReset(atMs);
  }

  private pendReset(atMs: number): void {
    this.resetPending = true;
    this.resetAtMs = atMs;
  }

  private startNumbering(): void {
    if (!this.resetPending) return;
    this.resetPending = false;
    this.count = 0;
    this.epoch++;
  }

  private die(e: EngineEvent, inShutdown: boolean): void {
    // A death after a stop whose start the stream lost (the engine's buffer overflowed): a new numbering began.
    this.startNumbering();
    const killed = this.lastKillMs !== undefined && e.atMs >= this.lastKillMs && e.atMs - this.lastKillMs <= KILL_BEFORE_DIE_MS;
    this.lastKillMs = undefined; // a kill ends in one die: the next death is on its own
    this.up = false;
    const base = { containerId: this.containerId, atMs: e.atMs, exitCode: e.exitCode, epoch: this.epoch };
    let death: TrueDeath;
    if (killed) {
      death = { ...base, kind: 'stop' };
      this.pendReset(e.atMs);
      this.lastStop = death;
    } else {
      // In a shutdown too: its restart manager may still restart a crash loop; the shutdown's stop ends the numbering.
      death = { ...base, kind: inShutdown ? 'shutdown-self' : 'policy', number: ++this.count };
    }
    this.deaths.push(death);
    const open = this.openEpisode();
    if (open) open.endedBy = death;
  }

  /**
   * Compares the model with an inspect of the container (a stopped container keeps its count until its next start):
   * a stop the stream never showed is added (foundByInspect), and so are deaths it never showed that RestartCount
   * does (unseen, dated by the container's last event: they came after it); returns a problem when the engine shows
   * fewer than the model (the model missed a reset).
   */
  rebaseline(seen: Inspected, atMs: number): string | undefined {
    if (!seen.running) this.foundStop(seen);
    // Started again after a stop whose start the stream lost (dockerd starting its containers overflows the buffer);
    // or down again with a count below the model's after a stop: a start the stream lost set it back (keeper's
    // recovery, right after dockerd's restart), and the run it began is over. Not a container dockerd left in its
    // restart backoff across its own restart: it shows "restarting", with the count and StartedAt of before (run G).
    const startedSince = seen.startedAtMs > this.resetAtMs;
    if ((seen.running && startedSince) || (this.resetPending && seen.restartCount < this.count)) this.startNumbering();
    if (!seen.running) this.downSeenAtMs.push(atMs);
    if (seen.restartCount < this.count)
      return `${this.containerId.slice(0, 12)}: RestartCount ${seen.restartCount} on the engine at ${new Date(atMs).toISOString()}, ${this.count} per the soak's events`;
    const from = Math.max(this.lastEventAtMs, 0);
    for (let n = this.count + 1; n <= seen.restartCount; n++) {
      this.deaths.push({ containerId: this.containerId, kind: 'unseen', atMs: from, number: n, epoch: this.epoch });
    }
    this.count = seen.restartCount;
    return undefined;
  }

  /** A container the model has up, found down by an exit after its last start: a stop the stream never showed. */
  private foundStop(seen: Inspected): void {
    if (!this.up || seen.finishedAtMs <= this.lastStartMs) return;
    const death: TrueDeath = {
      containerId: this.containerId,
      kind: 'stop',
      atMs: seen.finishedAtMs,
      exitCode: seen.exitCode,
      epoch: this.epoch,
      foundByInspect: true,
    };
    this.deaths.push(death);
    this.up = false;
    this.lastStop = death;
    this.pendReset(seen.finishedAtMs);
    const open = this.openEpisode();
    if (open) open.endedBy = death;
  }
}

/**
 * Checks the model of every container quiet for `quietMs` (no event in flight) against an inspect: its
 * RestartCount and whether it runs. Returns the problems (the soak's truth missed a reset).
 */
export async function rebaselineFromEngine(docker: Dockerode, witness: EngineWitness, quietMs: number): Promise<string[]> {
  const problems: string[] = [];
  for (const truth of witness.containers.values()) {
    const askedAtMs = Date.now();
    if (askedAtMs - truth.lastEventAtMs < quietMs) continue;
    const info = await docker.getContainer(truth.containerId).inspect();
    if (truth.lastEventAtMs > askedAtMs) continue; // an event arrived meanwhile: next time
    const problem = truth.rebaseline(inspected(info), askedAtMs);
    if (problem) problems.push(problem);
  }
  witness.problems.push(...problems);
  return problems;
}

function inspected(info: Dockerode.ContainerInspectInfo): Inspected {
  return {
    restartCount: info.RestartCount,
    running: info.State.Running || info.State.Restarting,
    startedAtMs: toUnixMs(info.State.StartedAt) ?? 0,
    finishedAtMs: toUnixMs(info.State.FinishedAt) ?? 0,
    exitCode: info.State.ExitCode,
  };
}

/**
 * A death before dockerd's shutdown began could be seen only by a look in between: the engine's restart then sets
 * RestartCount back to 0 and drops its events, and the shutdown's stop overwrites the run's exit. keeper looks at
 * once on a die event and at least every --reconcile-look-interval (10 s) besides; a death that had less than this
 * much of keeper's sight before the shutdown (the time between them, less what a blinding host fault took of it) is
 * one no look could see. Any other death keeper did not count is missed.
 */
export const LOOK_CHANCE_MS = 12_000;

/** A while keeper could not look (its worker down, the engine wedged, Temporal down, the state DB locked). */
export interface BlindWindow {
  fromMs: number;
  toMs: number;
}

/** dockerd's shutdowns as the ledger asks about them. */
export interface EngineWindows {
  /** Between the SIGTERM to dockerd and its exit (an open shutdown has no end yet). */
  inShutdown(atMs: number): boolean;
  /** Before a shutdown began, with less than LOOK_CHANCE_MS of keeper's sight between them. */
  justBeforeShutdown(atMs: number): boolean;
  /** The restart whose shutdown `atMs` falls in; undefined outside any. */
  restartOf(atMs: number): ShutdownWindow | undefined;
  /** dockerd came back (answered again) from a restart in (fromMs, toMs]. */
  backBetween(fromMs: number, toMs: number): boolean;
}

/** One dockerd restart: SIGTERM, its exit (open until then), and when it answered again. */
export interface ShutdownWindow {
  fromMs: number;
  toMs?: number;
  backAtMs?: number;
}

/** How much of [fromMs, toMs] keeper could look in: its length less the blind windows' overlap (merged first). */
export function sightMs(fromMs: number, toMs: number, blind: BlindWindow[]): number {
  let seen = 0;
  let at = fromMs;
  for (const w of [...blind].sort((a, b) => a.fromMs - b.fromMs)) {
    if (w.toMs <= at) continue;
    if (w.fromMs >= toMs) break;
    seen += Math.max(0, w.fromMs - at);
    at = Math.max(at, w.toMs);
    if (at >= toMs) return seen;
  }
  return seen + Math.max(0, toMs - at);
}

export function engineWindows(shutdowns: ShutdownWindow[], blind: BlindWindow[] = []): EngineWindows {
  const holding = (atMs: number) => shutdowns.find((w) => atMs >= w.fromMs && (w.toMs === undefined || atMs <= w.toMs));
  return {
    inShutdown: (atMs) => holding(atMs) !== undefined,
    restartOf: holding,
    backBetween: (fromMs, toMs) => shutdowns.some((w) => w.backAtMs !== undefined && w.backAtMs > fromMs && w.backAtMs <= toMs),
    justBeforeShutdown: (atMs) => shutdowns.some((w) => atMs < w.fromMs && sightMs(atMs, w.fromMs, blind) < LOOK_CHANCE_MS),
  };
}

/** A reconnect reads again from this long before the newest event it had, for events published late. */
const REPLAY_OVERLAP_NS = 30_000_000_000n;

/** A time as the engine's `since` takes it: seconds with nanoseconds. */
const sinceParam = (timeNano: bigint) => `${timeNano / 1_000_000_000n}.${String(timeNano % 1_000_000_000n).padStart(9, '0')}`;

/**
 * Follows the engine's container events of ah services from `sinceMs`, directly on its socket, reconnecting (with
 * `since` the last event it got, dropping the repeats) until `stop`. Each event goes to its container's model.
 */
export class EngineWitness {
  readonly containers = new Map<string, ContainerTruth>();
  /** dockerd shutdowns: [SIGTERM, exit] (an open one has no end yet), and when the engine answered again. */
  readonly shutdowns: ShutdownWindow[] = [];
  /** When the stream was down, for the report; reconnects are expected while dockerd restarts. */
  reconnects = 0;
  events = 0;
  /** Where the model and the engine's RestartCount disagreed: faults of the soak's truth, reported apart. */
  readonly problems: string[] = [];
  /** The newest event's time; a reconnect asks from a little before it, and drops what it had already. */
  private newestNano: bigint;
  private readonly seen = new Map<string, bigint>();
  private stopped = false;
  private stream: NodeJS.ReadableStream | undefined;
  private loop: Promise<void> | undefined;
  private connectedOnce: (() => void) | undefined;
  connected = false;

  constructor(
    private docker: Dockerode,
    containerIds: string[],
    sinceMs: number,
    /** Every event, one JSON line each, for debugging a ledger that does not balance. */
    private readonly logFile?: string,
  ) {
    for (const id of containerIds) this.containers.set(id, new ContainerTruth(id));
    this.newestNano = BigInt(sinceMs) * 1_000_000n;
  }

  /** The engine after a restart: same socket, a new connection. */
  setDocker(docker: Dockerode): void {
    this.docker = docker;
  }

  inShutdown = (atMs: number): boolean => engineWindows(this.shutdowns).inShutdown(atMs);

  /** dockerd exited at `atMs`: its shutdown ends there, and every container's numbering starts again. */
  engineExited(atMs: number): void {
    const open = this.shutdowns.find((w) => w.toMs === undefined);
    if (open) open.toMs = atMs;
    for (const truth of this.containers.values()) truth.engineStopped(atMs);
  }

  /** Starts following; resolves once the first connection is up. */
  start(): Promise<void> {
    const up = new Promise<void>((resolve) => (this.connectedOnce = resolve));
    this.loop = this.follow();
    return up;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    (this.stream as unknown as { destroy?: () => void })?.destroy?.();
    await this.loop;
  }

  /** Resolves once the stream is connected again (bounded), e.g. after dockerd came back. */
  async waitConnected(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.connected) {
      if (Date.now() > deadline) throw new Error(`the soak's event stream did not reconnect within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private async follow(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.followOnce();
      } catch {
        // dockerd is restarting (or the stream broke): reconnect from the last event below
      }
      this.connected = false;
      if (this.stopped) return;
      this.reconnects++;
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  private async followOnce(): Promise<void> {
    const filters = { type: ['container'], label: ['ah.service'], event: WATCHED_ACTIONS };
    const stream = (await this.docker.getEvents({
      since: sinceParam(this.newestNano - REPLAY_OVERLAP_NS) as unknown as number,
      filters: JSON.stringify(filters) as unknown as Record<string, string[]>,
    })) as NodeJS.ReadableStream;
    this.stream = stream;
    this.connected = true;
    this.connectedOnce?.();
    this.connectedOnce = undefined;
    const lines = readline.createInterface({ input: stream, crlfDelay: Infinity });
    await new Promise<void>((resolve, reject) => {
      lines.on('line', (line) => this.onLine(line));
      lines.on('error', reject);
      stream.on('error', reject);
      stream.on('end', resolve);
      stream.on('close', resolve);
    });
  }

  private forgetOlderThan(nano: bigint): void {
    for (const [key, t] of this.seen) if (t < nano) this.seen.delete(key);
  }

  private onLine(line: string): void {
    if (line.trim() === '') return;
    const raw = JSON.parse(line) as {
      id?: string;
      Action?: string;
      timeNano?: number | string;
      Actor?: { Attributes?: Record<string, string> };
    };
    const timeNano = BigInt(raw.timeNano ?? 0);
    // The engine does not always publish in time order (a health check's event can come after a later die), so
    // nothing is dropped for being older: only an event already had, replayed after a reconnect.
    const key = `${timeNano}:${raw.id}:${raw.Action}`;
    if (this.seen.has(key)) return;
    this.seen.set(key, timeNano);
    if (timeNano > this.newestNano) this.newestNano = timeNano;
    if (this.seen.size > 50_000) this.forgetOlderThan(this.newestNano - 2n * REPLAY_OVERLAP_NS);
    this.events++;
    const truth = this.containers.get(raw.id ?? '');
    if (!truth) return;
    const exit = raw.Actor?.Attributes?.exitCode;
    const event: EngineEvent = {
      atMs: Number(timeNano / 1_000_000n),
      timeNano,
      containerId: truth.containerId,
      action: raw.Action ?? '',
      ...(exit !== undefined && /^-?\d+$/.test(exit) ? { exitCode: Number(exit) } : {}),
    };
    truth.apply(event, this.inShutdown);
    if (this.logFile) fs.appendFileSync(this.logFile, `${JSON.stringify({ ...event, timeNano: String(timeNano) })}\n`);
  }
}
