/**
 * The Docker event watcher: it follows the engine's container events and, when an ah container dies, changes
 * health, runs out of memory or is removed, asks for a reconcile tick at once; when one starts, it asks for one
 * once the container can be seen back up (`lookAfterStartMs` later). It never counts
 * anything itself: the tick's compare-and-set on RestartCount stays the one place that counts deaths, so an
 * event seen twice (a replay) or missed (a drop) can only make a tick early or late, never a count wrong.
 *
 * It resumes from the last event it handled (stored in SQLite) after a stream drop or a worker restart,
 * reconnects with bounded exponential backoff, and records whether it follows the stream, so that
 * `keeper status` can say when keeper runs on the periodic tick alone.
 */
import type { DockerEvent, Engine } from '../docker/engine';
import { advanceEventCursor, readEventWatcherState, writeWatcherState, type WatcherState } from '../db/events';
import { whenWritable, WRITE_RETRY, WriteQueue, type WriteRetry } from '../db/busy';
import type { StateDb } from '../db/open';
import type { Logger } from '../log';
import { unixSeconds, type Clock } from '../time';
import { recordWatcherState, type KeeperMetrics } from '../metrics';
import { LABEL, RESOURCE_TYPE } from '../names';
import { exponentialBackoff } from '../policy/backoff';

export { readEventWatcherState, type EventWatcherState } from '../db/events';

/**
 * Reconnect backoff: the first retry, doubled per failure up to the ceiling. After this many failures in a row
 * the stream counts as unavailable (the periodic tick carries on alone).
 */
export const EVENT_RECONNECT_MIN_MS = 250;
export const EVENT_RECONNECT_MAX_MS = 15_000;
export const EVENT_UNAVAILABLE_AFTER_FAILURES = 3;
/** A burst of starts postpones its look by at most this many `lookAfterStartMs` after its first start. */
export const START_LOOK_MAX_POSTPONE = 3;
/** How long the engine may take to open the event stream before the attempt counts as failed. */
export const EVENT_CONNECT_TIMEOUT_MS = 10_000;
/**
 * A change a local look found is owed its event this long after it happened (the engine sends it within
 * milliseconds): past that, an open stream that has said nothing of it is silent (a half-open connection, a stuck
 * proxy, a wedged engine thread).
 */
export const EVENT_OWED_AFTER_MS = 5_000;
/** How long the tick an event asked for is counted on to handle the change: longer than a tick takes, shorter than a look. */
export const EVENT_IN_HAND_MS = 15_000;
/** The last state a stopping watcher writes waits this little for another writer's lock: the worker is on its way out. */
const STOPPED_WRITE_RETRY: WriteRetry = { ...WRITE_RETRY, totalMs: 5_000 };
/** A stream still silent after it was reopened is reopened again this often, until one reports. */
const SILENT_REOPEN_EVERY_MS = 30_000;
/** How long the watcher remembers which containers it had events of: longer than any look interval. */
const EVENTS_REMEMBERED_MS = 10 * 60_000;

/** The container events that can change what a tick finds. health_status matches every `health_status: …`. */
export const WATCHED_ACTIONS = ['die', 'start', 'health_status', 'oom', 'destroy'];
/** ah.type values of containers the tick reconciles besides services (warm-pool containers are the pool's). */
const RECONCILED_TYPES = new Set<string>([RESOURCE_TYPE.database, RESOURCE_TYPE.environment]);

export interface EventWatcherOptions {
  db: StateDb;
  docker: Pick<Engine, 'streamEvents'>;
  hostId: string;
  log: Logger;
  /** Asks for one reconcile tick now, naming the service of the event that asked if any; false: declined (paused). */
  requestTick: (serviceId?: string) => Promise<boolean | void>;
  debounceMs: number;
  /**
   * How long after a container starts its look is due: a crashed service counts as back up only once its container
   * has run a while, so a look at the start itself (a restart's start follows its die within the same second)
   * would change nothing and cost a pass. 0: at once.
   */
  lookAfterStartMs?: number;
  reconnect?: { minMs: number; maxMs: number; unavailableAfter: number };
  /** For the times it records; the system's when unset. */
  clock?: Clock;
  /** The worker's metrics: the state goes to `keeper_event_watcher_state` as well as to the DB. */
  metrics?: KeeperMetrics;
}

export interface WatcherStats {
  events: number; // received from the engine
  relevant: number; // of ah containers the tick reconciles
  replayed: number; // relevant events from before the stream (re)opened: the gap, resumed with `since`
  ticksRequested: number; // accepted requests
  declined: number; // requests the schedule's owner declined (an operator paused it)
  connects: number;
  silences: number; // streams found silent by a local look, and reopened
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

/** A change a local look found (src/sensors/): a container of the service row, and when it happened (unix ms). */
export interface SeenChange {
  containerId: string;
  atMs: number;
  item: string;
}

export class EventWatcher {
  readonly stats: WatcherStats = { events: 0, relevant: 0, replayed: 0, ticksRequested: 0, declined: 0, connects: 0, silences: 0 };
  private stopped = false;
  private loop: Promise<void> | undefined;
  private closeStream: (() => void) | undefined;
  private connecting: AbortController | undefined;
  private wake: (() => void) | undefined;
  private window: NodeJS.Timeout | undefined;
  /** The pending look after starts, and when the latest start's look is due (epoch ms). */
  private startLook: NodeJS.Timeout | undefined;
  private latestStartDueMs = 0;
  private latestStartService: string | undefined;
  private pending = false;
  private inFlight: Promise<void> = Promise.resolve();
  private requesting = 0;
  private seenNs: bigint | null = null;
  private state: WatcherState | undefined;
  /** Why the stream counts as silent, until an event arrives on it again; undefined while it is not. */
  private silence: string | undefined;
  /** While silent: reopens the stream now and then, until one reports. */
  private silentProbe: NodeJS.Timeout | undefined;
  /** The engine time of the latest event received on any stream (ns). */
  private lastEventNs: bigint | null = null;
  /** When the current stream was opened (unix ms); undefined while there is none. */
  private followingSinceMs: number | undefined;
  /** The latest relevant event (its engine time, unix ms) of each container, by full id. */
  private readonly lastEventMs = new Map<string, number>();
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

  /** No tick request is in flight or waiting for its window. */
  get idle(): boolean {
    return !this.window && !this.startLook && !this.pending && this.requesting === 0;
  }

  /** A container start's look is armed: a service coming back up will be looked at. */
  get startLookPending(): boolean {
    return this.startLook !== undefined;
  }

  /** What the stream said of a change a local look found (the looks' EventWitness, src/sensors/sensors.ts). */
  account(change: SeenChange, nowMs: number): 'explained' | 'handled' | 'too-recent' | 'missed' | 'not-following' {
    if (this.followingSinceMs === undefined) return 'not-following';
    // A change from before this stream opened is the catch-up tick's, asked for at the connect.
    if (change.atMs < this.followingSinceMs) return 'not-following';
    const seen = this.lastEventMs.get(change.containerId) ?? this.eventOfPrefix(change.containerId);
    // Its event arrived: the tick it asked for is in hand, for a while. Past that, that tick has run and left the
    // change for later (an engine stop held for its grace): it is the look's to ask for.
    if (seen !== undefined && seen >= change.atMs - 1000) return nowMs - seen < EVENT_IN_HAND_MS ? 'explained' : 'handled';
    return nowMs - change.atMs < EVENT_OWED_AFTER_MS ? 'too-recent' : 'missed';
  }

  /**
   * A local look found changes the open stream did not report: the stream is silent. It is reopened (resuming from
   * the cursor, so what it missed is replayed if the engine still has it), and counts as `silent`, which the
   * KeeperEventWatcherUnavailable alert reads, until an event arrives on it again.
   */
  streamMissed(changes: SeenChange[]): void {
    if (this.stopped || this.closeStream === undefined || this.silence !== undefined) return;
    const first = changes[0];
    this.silence = `the event stream did not report ${changes.length} change(s) a local look found (first: ${first.item}, ${Math.round((Date.now() - first.atMs) / 1000)} s ago)`;
    this.stats.silences++;
    this.o.log.warn('docker event stream is silent: reopening it; local looks see every change meanwhile', { why: this.silence });
    this.setState('silent', this.silence);
    this.silentProbe = setInterval(() => this.closeStream?.(), SILENT_REOPEN_EVERY_MS);
    this.silentProbe.unref?.();
    this.closeStream();
  }

  start(): void {
    this.loop ??= this.follow();
  }

  /** Closes the stream and waits for the last tick request; the cursor stays for the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.silentProbe);
    clearTimeout(this.window);
    clearTimeout(this.startLook);
    this.closeStream?.();
    this.connecting?.abort();
    this.wake?.();
    await this.loop;
    await this.inFlight;
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
        this.o.log.warn('docker event stream unavailable: crashes are seen by the periodic reconcile tick only', { error });
      } else if (!unavailable) {
        this.o.log.warn('docker event stream lost; reconnecting', { error, retryInMs: delay });
      }
      this.setState(this.silence !== undefined ? 'silent' : unavailable ? 'unavailable' : 'reconnecting', this.silence ?? error);
      await this.sleep(delay);
    }
  }

  /**
   * One connection: resumes at the stored cursor, asks for a catch-up tick, then handles events until it ends. A
   * stream opened to end a silence resumes from the latest event ever received, if that is earlier: a healthy
   * stream replays it at once, which proves it reports; it asks for no tick of its own (the looks see every change).
   */
  private async followOnce(onConnected: () => void): Promise<void> {
    const cursor = readEventWatcherState(this.o.db, this.o.hostId)?.lastEventNs ?? null;
    const openedNs = BigInt(Date.now()) * 1_000_000n;
    const probing = this.silence !== undefined;
    // With no cursor (first start) only new events matter: a tick covers the past anyway.
    const from = cursor ?? openedNs;
    const since = probing && this.lastEventNs !== null && this.lastEventNs < from ? this.lastEventNs : from;
    // A hung engine must not hang the watcher (or the worker's shutdown): the connect has a deadline.
    const connecting = (this.connecting = new AbortController());
    const deadline = setTimeout(() => connecting.abort(), EVENT_CONNECT_TIMEOUT_MS);
    const stream = await this.o.docker
      .streamEvents({ since: sinceParam(since), types: ['container'], actions: WATCHED_ACTIONS, signal: connecting.signal }, (e) =>
        this.onEvent(e, openedNs, cursor),
      )
      .finally(() => clearTimeout(deadline));
    this.connecting = undefined;
    this.closeStream = stream.close;
    if (this.stopped) stream.close();
    onConnected();
    this.stats.connects++;
    this.followingSinceMs = Number(openedNs / 1_000_000n);
    if (!probing) this.setState('following', '');
    this.o.log.info('following docker events', { resumedFrom: sinceParam(since) });
    if (!probing) {
      // The engine replays events only from its own memory, which a dockerd restart empties: one tick covers the
      // gap, and everything before this connect with it, so the cursor may move up to here once it is accepted.
      this.see(openedNs);
      this.requestSoon();
    }
    await stream.done;
  }

  /** `coveredNs`: the cursor this stream resumed from; a replayed event up to it was covered by an accepted tick. */
  private onEvent(e: DockerEvent, openedNs: bigint, coveredNs: bigint | null): void {
    this.stats.events++;
    this.see(e.timeNano);
    if (this.lastEventNs === null || e.timeNano > this.lastEventNs) this.lastEventNs = e.timeNano;
    this.heardAgain();
    if (!isRelevant(e)) return;
    this.stats.relevant++;
    this.remember(e.id, Number(e.timeNano / 1_000_000n));
    if (coveredNs !== null && e.timeNano <= coveredNs) return;
    if (e.timeNano < openedNs) this.stats.replayed++;
    this.o.log.debug('docker event', { action: e.action, container: e.id.slice(0, 12), service: e.attributes[LABEL.service] });
    if (e.action === 'start' && this.o.lookAfterStartMs) this.lookAfterStart(e.attributes[LABEL.service]);
    else this.requestSoon(e.attributes[LABEL.service]);
  }

  /**
   * One timer for every start, a trailing one: due `lookAfterStartMs` after the latest start, so a burst of starts
   * (a crash loop's restarts) makes one look once it is quiet; a burst that goes on is looked at no later than
   * START_LOOK_MAX_POSTPONE delays after its first start. Every start is followed by a look at least the delay after it.
   */
  private lookAfterStart(serviceId?: string): void {
    this.latestStartDueMs = Date.now() + (this.o.lookAfterStartMs ?? 0);
    this.latestStartService = serviceId;
    if (!this.startLook) this.armStartLook(this.latestStartDueMs, this.latestStartDueMs);
  }

  private armStartLook(dueMs: number, firstDueMs: number): void {
    this.startLook = setTimeout(
      () => {
        const latest = this.latestStartDueMs;
        const later = latest > Date.now();
        const postponeMs = START_LOOK_MAX_POSTPONE * (this.o.lookAfterStartMs ?? 0);
        if (later && latest - firstDueMs < postponeMs) return this.armStartLook(latest, firstDueMs);
        this.startLook = undefined;
        this.requestSoon(this.latestStartService);
        if (later) this.armStartLook(latest, latest);
      },
      Math.max(0, dueMs - Date.now()),
    );
  }

  /** An event arrived: a stream that was silent reports again. */
  private heardAgain(): void {
    if (this.silence === undefined) return;
    this.silence = undefined;
    clearInterval(this.silentProbe);
    this.silentProbe = undefined;
    this.o.log.info('docker event stream reports again', {});
    this.setState('following', '');
  }

  private remember(containerId: string, atMs: number): void {
    this.lastEventMs.set(containerId, Math.max(atMs, this.lastEventMs.get(containerId) ?? 0));
    if (this.lastEventMs.size < 1000) return;
    for (const [id, at] of this.lastEventMs) if (at < atMs - EVENTS_REMEMBERED_MS) this.lastEventMs.delete(id);
  }

  /** A service row may hold a 12-character prefix of the id that events carry in full. */
  private eventOfPrefix(containerId: string): number | undefined {
    for (const [id, at] of this.lastEventMs) if (id.startsWith(containerId)) return at;
    return undefined;
  }

  private see(ns: bigint): void {
    if (this.seenNs === null || ns > this.seenNs) this.seenNs = ns;
  }

  /**
   * Leading edge, then a quiet window: the first event asks for a tick at once (latency), and all events
   * inside the next debounce window make one more request at its end (a burst makes at most two).
   */
  private requestSoon(serviceId?: string): void {
    if (this.stopped) return;
    if (this.window) {
      this.pending = true;
      return;
    }
    this.requesting++;
    this.inFlight = this.inFlight.then(() => this.request(serviceId)).finally(() => this.requesting--);
    this.window = setTimeout(() => {
      this.window = undefined;
      if (!this.pending) return;
      this.pending = false;
      this.requestSoon();
    }, this.o.debounceMs);
  }

  /** The cursor moves only once a tick that will see those events is accepted. */
  private async request(serviceId?: string): Promise<void> {
    const upTo = this.seenNs;
    try {
      if ((await this.o.requestTick(serviceId)) === false) {
        // Paused: the cursor stays, so a restart after the pause replays these events.
        this.stats.declined++;
        return;
      }
      this.stats.ticksRequested++;
      const nowSec = unixSeconds(this.o.clock);
      if (upTo !== null) await whenWritable('the event cursor', () => advanceEventCursor(this.o.db, this.o.hostId, upTo, nowSec));
    } catch (err) {
      this.o.log.warn('could not ask for a reconcile tick; the periodic tick will see the change', { error: (err as Error).message });
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
