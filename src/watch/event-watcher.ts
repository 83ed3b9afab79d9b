/**
 * The Docker event watcher: it follows the engine's container events and, when an ah container dies, changes
 * health, runs out of memory or is removed, requests a reconcile tick at once; when one starts, it requests one
 * once the container can be seen back up (`requestAfterStartMs` later). It never counts anything itself: an event
 * is a hint (src/watch/event-hints.ts), and the tick's compare-and-set on RestartCount stays the one place that
 * counts deaths, so an event seen twice (a replay) or missed (a drop) can only make a tick early or late, never a
 * count wrong. It is the looks' event path (src/watch/look-runner.ts): it says whether it covers a change a look
 * found, and a change it missed tells it its stream went silent.
 *
 * It resumes from the last event it handled (stored in SQLite) after a stream drop or a worker restart,
 * reconnects with bounded exponential backoff, and records whether it follows the stream, so that
 * `keeper status` can say when keeper runs on the looks alone.
 */
import type { DockerEvent, Engine } from '../docker/engine';
import type { ContainerChange, FoundItem } from './finding';
import type { Coverage } from './look-runner';
import { advanceEventCursor, readEventWatcherState, writeWatcherState, type WatcherState } from '../db/events';
import { whenWritable, WRITE_RETRY, WriteQueue, type WriteRetry } from '../db/busy';
import type { StateDb } from '../db/open';
import type { Logger } from '../log';
import { unixSeconds, type Clock } from '../time';
import { recordWatcherState, type KeeperMetrics } from '../metrics';
import { eventProbeVolume, KEEPER_PROBE_LABEL, LABEL, RESOURCE_TYPE } from '../names';
import { exponentialBackoff } from '../policy/backoff';

export { readEventWatcherState, type EventWatcherState } from '../db/events';

/**
 * Reconnect backoff: the first retry, doubled per failure up to the ceiling. After this many failures in a row
 * the stream counts as unavailable (the looks carry on alone).
 */
export const EVENT_RECONNECT_MIN_MS = 250;
export const EVENT_RECONNECT_MAX_MS = 15_000;
export const EVENT_UNAVAILABLE_AFTER_FAILURES = 3;
/** A burst of starts postpones its request by at most this many `requestAfterStartMs` after its first start. */
export const START_REQUEST_MAX_POSTPONE = 3;
/** How long the engine may take to open the event stream before the attempt counts as failed. */
export const EVENT_CONNECT_TIMEOUT_MS = 10_000;
/**
 * A change a local look found is owed its event this long after it happened (the engine sends it within
 * milliseconds): past that, an open stream that has said nothing of it is silent (a half-open connection, a stuck
 * proxy, a wedged engine thread).
 */
export const EVENT_OWED_AFTER_MS = 5_000;
/** How long the tick an event requested covers the change: longer than a tick takes, shorter than a look. */
export const EVENT_COVERS_MS = 15_000;
/** The last state a stopping watcher writes waits this little for another writer's lock: the worker is on its way out. */
const STOPPED_WRITE_RETRY: WriteRetry = { ...WRITE_RETRY, totalMs: 5_000 };
/** A stream still silent after it was reopened is reopened again this often, until one reports. */
export const SILENT_REOPEN_EVERY_MS = 30_000;

/** The container events that can change what a tick finds. health_status matches every `health_status: …`. */
export const WATCHED_ACTIONS = ['die', 'start', 'health_status', 'oom', 'destroy'];
/**
 * What the stream asks for: those, and volumes' creates and removals, of which the silent stream's probe is one (a
 * container's `create` comes too, and asks for nothing).
 */
const STREAM_QUERY = { types: ['container', 'volume'], actions: [...WATCHED_ACTIONS, 'create'] };
/** ah.type values of containers the tick reconciles besides services (warm-pool containers are the pool's). */
const RECONCILED_TYPES = new Set<string>([RESOURCE_TYPE.database, RESOURCE_TYPE.environment]);

/** Where the watcher keeps the latest event of each container, for the observations of its process (src/watch/event-hints.ts). */
export interface EventHintStore {
  noteEvent(containerId: string, atMs: number): void;
  lastEventAtMs(containerId: string): number | undefined;
}

export interface EventWatcherOptions {
  db: StateDb;
  hints: EventHintStore;
  /** The stream, and a volume of the watcher's own that proves a reopened stream reports live events. */
  docker: Pick<Engine, 'streamEvents' | 'createVolume' | 'removeVolume'>;
  hostId: string;
  log: Logger;
  /** Requests one reconcile tick now, naming the service of the event that requested it if any; false: declined (paused). */
  request: (serviceId?: string) => Promise<boolean | void>;
  debounceMs: number;
  /**
   * How long after a container starts its request is due: a crashed service counts as back up only once its
   * container has run a while, so a tick at the start itself (a restart's start follows its die within the same
   * second) would change nothing and cost a pass. 0: at once.
   */
  requestAfterStartMs?: number;
  reconnect?: { minMs: number; maxMs: number; unavailableAfter: number };
  /** A stream still silent after it was reopened is reopened again this often (SILENT_REOPEN_EVERY_MS). */
  silentReopenEveryMs?: number;
  /** For the times it records; the system's when unset. */
  clock?: Clock;
  /** The worker's metrics: the state goes to `keeper_event_watcher_state` as well as to the DB. */
  metrics?: KeeperMetrics;
}

export interface WatcherStats {
  events: number; // received from the engine
  relevant: number; // of ah containers the tick reconciles
  replayed: number; // relevant events from before the stream (re)opened: the gap, resumed with `since`
  requested: number; // requests Temporal took
  declined: number; // requests the schedule's owner declined (an operator paused it)
  connects: number;
  silences: number; // streams found silent by a local look, and reopened
  probes: number; // live events the watcher made itself to prove a reopened stream reports
}

/** Whether an event concerns a container the reconcile tick looks at: labels travel in the attributes. */
export function isRelevant(e: DockerEvent): boolean {
  if (e.type !== 'container') return false;
  const action = e.action.split(':')[0];
  if (!WATCHED_ACTIONS.includes(action)) return false;
  return Boolean(e.attributes[LABEL.service]) || RECONCILED_TYPES.has(e.attributes[LABEL.type] ?? '');
}

/** Docker's `since` for a nanosecond engine time: `seconds.nanoseconds`. */
export function sinceParam(ns: bigint): string {
  const sec = ns / 1_000_000_000n;
  const frac = (ns % 1_000_000_000n).toString().padStart(9, '0');
  return `${sec}.${frac}`;
}

export class EventWatcher {
  readonly stats: WatcherStats = {
    events: 0,
    relevant: 0,
    replayed: 0,
    requested: 0,
    declined: 0,
    connects: 0,
    silences: 0,
    probes: 0,
  };
  private stopped = false;
  private loop: Promise<void> | undefined;
  private closeStream: (() => void) | undefined;
  private connecting: AbortController | undefined;
  private wake: (() => void) | undefined;
  private window: NodeJS.Timeout | undefined;
  /** The pending request after starts, and when the latest start's request is due (epoch ms). */
  private startRequest: NodeJS.Timeout | undefined;
  private latestStartDueMs = 0;
  private latestStartService: string | undefined;
  private pending = false;
  /** The request being made, and whether another is owed once it is taken: never more than one waits behind it. */
  private inFlight: Promise<void> | undefined;
  private owed: { serviceId?: string } | undefined;
  private seenNs: bigint | null = null;
  private state: WatcherState | undefined;
  /** Why the stream counts as silent, until an event arrives on it again; undefined while it is not. */
  private silence: string | undefined;
  /** While silent: reopens the stream now and then, until one reports. */
  private silentProbe: NodeJS.Timeout | undefined;
  /** When the current stream was opened (unix ms); undefined while there is none. */
  private followingSinceMs: number | undefined;
  private readonly reconnect: NonNullable<EventWatcherOptions['reconnect']>;
  /** A locked or closed DB must not stop the watcher; the state shows again at the next change. */
  private readonly stateWrites = new WriteQueue((what, err) =>
    this.o.log.warn('could not record the event watcher state', { state: what, error: (err as Error).message }),
  );

  constructor(private readonly o: EventWatcherOptions) {
    this.reconnect = o.reconnect ?? {
      minMs: EVENT_RECONNECT_MIN_MS,
      maxMs: EVENT_RECONNECT_MAX_MS,
      unavailableAfter: EVENT_UNAVAILABLE_AFTER_FAILURES,
    };
  }

  /** No request is in flight or waiting for its window. */
  get idle(): boolean {
    return !this.window && !this.startRequest && !this.pending && this.inFlight === undefined;
  }

  /** A container start's request is armed: a service coming back up will be reconciled. */
  get startRequestPending(): boolean {
    return this.startRequest !== undefined;
  }

  /** Whether the stream covers a change a look found (the looks' EventPath, src/watch/look-runner.ts). */
  coverage(change: ContainerChange, nowMs: number): Coverage {
    if (this.followingSinceMs === undefined) return 'uncovered';
    // A change from before this stream opened is none of its events' to cover.
    if (change.atMs < this.followingSinceMs) return 'uncovered';
    const seen = this.o.hints.lastEventAtMs(change.containerId);
    // Its event arrived: the tick it requested covers it, for a while. Past that, that tick has run and left the
    // change for later (an engine stop held for its grace): it is the look's to request.
    if (seen !== undefined && seen >= change.atMs - 1000) return nowMs - seen < EVENT_COVERS_MS ? 'covered' : 'uncovered';
    // Its event may still come; past the time it was owed, the open stream is silent.
    return nowMs - change.atMs < EVENT_OWED_AFTER_MS ? 'covered' : 'missed';
  }

  /**
   * A local look found changes the open stream did not report: the stream is silent. It is reopened (resuming from
   * the cursor, so what it missed is replayed if the engine still has it), and counts as `silent`, which the
   * KeeperEventWatcherUnavailable alert reads, until a live event arrives on it (a replay is not enough: a stream that
   * replays history but drops live events is still silent).
   */
  streamMissed(items: FoundItem[]): void {
    if (this.stopped || this.closeStream === undefined || this.silence !== undefined) return;
    const first = items[0];
    const agoSec = first.change ? Math.round((Date.now() - first.change.atMs) / 1000) : 0;
    this.silence = `the event stream did not report ${items.length} change(s) a local look found (first: ${first.key}, ${agoSec} s ago)`;
    this.stats.silences++;
    this.o.log.warn('docker event stream is silent: reopening it; local looks see every change meanwhile', { why: this.silence });
    this.setState('silent', this.silence);
    this.silentProbe = setInterval(() => this.closeStream?.(), this.o.silentReopenEveryMs ?? SILENT_REOPEN_EVERY_MS);
    this.silentProbe.unref?.();
    this.closeStream();
  }

  start(): void {
    this.loop ??= this.follow();
  }

  /** Closes the stream and waits for the last request; the cursor stays for the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.silentProbe);
    clearTimeout(this.window);
    clearTimeout(this.startRequest);
    this.closeStream?.();
    this.connecting?.abort();
    this.wake?.();
    await this.loop;
    while (this.inFlight) await this.inFlight;
    this.setState('stopped', '', STOPPED_WRITE_RETRY);
    await this.stateWrites.drained();
  }

  private async follow(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      let error: string;
      try {
        await this.followOnce(() => (failures = 0));
        error = 'the engine closed the event stream';
      } catch (err) {
        error = (err as Error).message;
      }
      this.followingSinceMs = undefined;
      this.closeStream = undefined;
      if (this.stopped) break;
      // A stream closed for its silence is reopened at once; it stays `silent` until an event arrives.
      if (this.silence !== undefined && failures === 0) {
        failures++;
        continue;
      }
      failures++;
      const unavailable = failures >= this.reconnect.unavailableAfter;
      const delay = exponentialBackoff(failures, this.reconnect.minMs, this.reconnect.maxMs);
      if (unavailable && this.state !== 'unavailable') {
        this.o.log.warn('docker event stream unavailable: crashes are seen by the local looks only', { error });
      } else if (!unavailable) {
        this.o.log.warn('docker event stream lost; reconnecting', { error, retryInMs: delay });
      }
      this.setState(this.silence !== undefined ? 'silent' : unavailable ? 'unavailable' : 'reconnecting', this.silence ?? error);
      await this.sleep(delay);
    }
  }

  /**
   * One connection: resumes at the stored cursor, requests a tick that catches up, then handles events until it
   * ends. A stream opened to end a silence asks the engine for no replay, so that every event it delivers is live,
   * which is what proves it reports (a replay proves only that the engine remembers); it makes such an event itself
   * (probe), and requests no tick of its own: the looks see every change meanwhile.
   */
  private async followOnce(onConnected: () => void): Promise<void> {
    const cursor = readEventWatcherState(this.o.db, this.o.hostId)?.lastEventNs ?? null;
    const openedNs = BigInt(Date.now()) * 1_000_000n;
    const probing = this.silence !== undefined;
    // With no cursor (first start) only new events matter: a tick covers the past anyway.
    const since = probing ? undefined : sinceParam(cursor ?? openedNs);
    // A hung engine must not hang the watcher (or the worker's shutdown): the connect has a deadline.
    const connecting = (this.connecting = new AbortController());
    const deadline = setTimeout(() => connecting.abort(), EVENT_CONNECT_TIMEOUT_MS);
    const stream = await this.o.docker
      .streamEvents({ ...(since ? { since } : {}), ...STREAM_QUERY, signal: connecting.signal }, (e) =>
        this.onEvent(e, openedNs, cursor, probing),
      )
      .finally(() => clearTimeout(deadline));
    this.connecting = undefined;
    this.closeStream = stream.close;
    if (this.stopped) stream.close();
    onConnected();
    this.stats.connects++;
    this.followingSinceMs = Number(openedNs / 1_000_000n);
    this.o.log.info('following docker events', { resumedFrom: since ?? 'now (live events only, to prove the stream reports)' });
    if (probing) void this.probe();
    else {
      this.setState('following', '');
      // The engine replays events only from its own memory, which a dockerd restart empties: one tick covers the
      // gap, and everything before this connect with it, so the cursor may move up to here once it is accepted.
      this.see(openedNs);
      this.requestSoon();
    }
    await stream.done;
  }

  /**
   * `coveredNs`: the cursor this stream resumed from; a replayed event up to it was covered by an accepted tick.
   * `live`: the stream replays nothing, so the event proves that it reports.
   */
  private onEvent(e: DockerEvent, openedNs: bigint, coveredNs: bigint | null, live: boolean): void {
    this.stats.events++;
    this.see(e.timeNano);
    if (live) this.heardAgain();
    if (!isRelevant(e)) return;
    this.stats.relevant++;
    this.o.hints.noteEvent(e.id, Number(e.timeNano / 1_000_000n));
    if (coveredNs !== null && e.timeNano <= coveredNs) return;
    if (e.timeNano < openedNs) this.stats.replayed++;
    this.o.log.debug('docker event', { action: e.action, container: e.id.slice(0, 12), service: e.attributes[LABEL.service] });
    if (e.action === 'start' && this.o.requestAfterStartMs) this.requestAfterStart(e.attributes[LABEL.service]);
    else this.requestSoon(e.attributes[LABEL.service]);
  }

  /**
   * One timer for every start, a trailing one: due `requestAfterStartMs` after the latest start, so a burst of starts
   * (a crash loop's restarts) makes one request once it is quiet; a burst that goes on is requested no later than
   * START_REQUEST_MAX_POSTPONE delays after its first start. Every start is followed by a request at least the delay
   * after it.
   */
  private requestAfterStart(serviceId?: string): void {
    this.latestStartDueMs = Date.now() + (this.o.requestAfterStartMs ?? 0);
    this.latestStartService = serviceId;
    if (!this.startRequest) this.armStartRequest(this.latestStartDueMs, this.latestStartDueMs);
  }

  private armStartRequest(dueMs: number, firstDueMs: number): void {
    this.startRequest = setTimeout(
      () => {
        const latest = this.latestStartDueMs;
        const later = latest > Date.now();
        const postponeMs = START_REQUEST_MAX_POSTPONE * (this.o.requestAfterStartMs ?? 0);
        if (later && latest - firstDueMs < postponeMs) return this.armStartRequest(latest, firstDueMs);
        this.startRequest = undefined;
        this.requestSoon(this.latestStartService);
        if (later) this.armStartRequest(latest, latest);
      },
      Math.max(0, dueMs - Date.now()),
    );
  }

  /**
   * While silent, a reopened stream must show that it delivers live events, not only the replay it resumes with: the
   * watcher makes one, a volume of its own created and removed at once (eventProbeVolume, src/names.ts; GC never
   * touches it, and it leaves nothing behind), whose events a stream that reports delivers within milliseconds. A
   * quiet host would otherwise stay `silent`, and alert, with nothing wrong. Best effort: an engine that refuses
   * leaves the stream silent until a live event of its own.
   */
  private async probe(): Promise<void> {
    const name = eventProbeVolume(this.o.hostId);
    this.stats.probes++;
    try {
      await this.o.docker.createVolume(name, { [KEEPER_PROBE_LABEL]: 'events' });
      await this.o.docker.removeVolume(name);
    } catch (err) {
      this.o.log.debug('could not make a live event for the reopened stream; waiting for one', { error: (err as Error).message });
    }
  }

  /** A live event arrived: a stream that was silent reports again. */
  private heardAgain(): void {
    if (this.silence === undefined) return;
    this.silence = undefined;
    clearInterval(this.silentProbe);
    this.silentProbe = undefined;
    this.o.log.info('docker event stream reports again', {});
    this.setState('following', '');
  }

  private see(ns: bigint): void {
    if (this.seenNs === null || ns > this.seenNs) this.seenNs = ns;
  }

  /**
   * Leading edge, then a quiet window: the first event requests a tick at once (latency), and all events
   * inside the next debounce window make one more request at its end (a burst makes at most two).
   */
  private requestSoon(serviceId?: string): void {
    if (this.stopped) return;
    if (this.window) {
      this.pending = true;
      return;
    }
    this.send(serviceId);
    this.window = setTimeout(() => {
      this.window = undefined;
      if (!this.pending) return;
      this.pending = false;
      this.requestSoon();
    }, this.o.debounceMs);
  }

  /**
   * One request at a time. One made while another waits to be taken (Temporal down, say) is owed, and made once
   * that one is: however long the wait and however many events arrive meanwhile, one request waits behind it, and
   * the run it requests sees every event up to then.
   */
  private send(serviceId?: string): void {
    if (this.inFlight) {
      this.owed = { serviceId: this.owed ? undefined : serviceId };
      return;
    }
    this.inFlight = this.request(serviceId).finally(() => {
      this.inFlight = undefined;
      const owed = this.owed;
      this.owed = undefined;
      if (owed && !this.stopped) this.send(owed.serviceId);
    });
  }

  /** The cursor moves only once a tick that will see those events is accepted. */
  private async request(serviceId?: string): Promise<void> {
    const upTo = this.seenNs;
    try {
      if ((await this.o.request(serviceId)) === false) {
        // Paused: the cursor stays, so a restart after the pause replays these events.
        this.stats.declined++;
        return;
      }
      this.stats.requested++;
      const nowSec = unixSeconds(this.o.clock);
      if (upTo !== null) await whenWritable('the event cursor', () => advanceEventCursor(this.o.db, this.o.hostId, upTo, nowSec));
    } catch (err) {
      this.o.log.warn('could not request a reconcile tick; the local looks will see the change', { error: (err as Error).message });
    }
  }

  /** The state at once in the metrics, and in the DB in order, each write waiting for another writer's lock awaited. */
  private setState(state: WatcherState, error: string, retry?: WriteRetry): void {
    this.state = state;
    if (this.o.metrics) recordWatcherState(this.o.metrics, state);
    const nowSec = unixSeconds(this.o.clock);
    void this.stateWrites.push(
      `the event watcher state ${state}`,
      () => writeWatcherState(this.o.db, this.o.hostId, state, error, nowSec),
      retry,
    );
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wake = () => (clearTimeout(t), resolve());
    });
  }
}
