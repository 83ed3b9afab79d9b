/**
 * What watches a host between its runs, in its worker: the Docker event watcher, the disk watcher and the local
 * looks (src/watch/), over one requester per loop that keeps each request until Temporal takes it. Looking is
 * local and free; only a look or an event that finds something to do requests a run. The looks and the requesters
 * are the loops' registry's (src/loops/registry.ts): each loop's look and its way of being requested, as its unit
 * declares them. Events are the reconcile loop's to hear, and disk pressure the gc loop's.
 */
import type { Client } from '@temporalio/client';
import { WriteQueue } from '../db/busy';
import { recordLookState } from '../db/look-states';
import { oneLine } from '../text';
import { lastLoopResult } from '../db/loop-results';
import { clearRequestFailure, recordRequestFailure } from '../db/request-failures';
import { DiskWatcher, type DiskWatcherOptions } from '../host/disk-watcher';
import { EventWatcher, type EventWatcherOptions } from '../watch/event-watcher';
import type { HostDeps } from '../host/deps';
import { EngineView } from '../watch/engine-view';
import { EventHints } from '../watch/event-hints';
import { BACK_UP_AFTER_SEC } from '../policy/deaths/shown';
import { LOOPS, type Loop, type LoopName } from '../loops/registry';
import type { Settings } from '../settings';
import { unixSeconds } from '../time';
import { LoopRequester, type FailingRequest } from '../watch/requests';
import { LookRunner, type EventPath, type LoopLook } from '../watch/look-runner';
import { isPermanentRefusal } from '../temporal/operations';

export type HostRequests = Record<LoopName, LoopRequester>;

export interface HostWatch {
  events: EventWatcher;
  disk: DiskWatcher;
  looks: LookRunner;
  requests: HostRequests;
  start(): void;
  /** Stops in reverse, requests first: a request that Temporal has not taken is dropped, not waited for. */
  stop(): Promise<void>;
}

interface WatchParts {
  settings: Settings;
  deps: HostDeps;
}

/**
 * One requester per loop, each sending the way its unit requests a run (its schedule's trigger, or its own), counting
 * each attempt's outcome, and keeping a request that fails for `keeper status` (keeper_request_failures; a previous
 * run's rows go at the start).
 */
export function hostRequests(client: Client, { settings, deps }: WatchParts): HostRequests {
  const { log, db } = deps;
  const hostId = settings.hostId;
  type Send = (why: string, serviceId?: string) => Promise<boolean>;
  const counted =
    (loop: LoopName, send: Send): Send =>
    async (why, serviceId) => {
      try {
        const taken = await send(why, serviceId);
        deps.metrics?.runRequests.add(1, { loop, outcome: taken ? 'taken' : 'declined' });
        return taken;
      } catch (err) {
        deps.metrics?.runRequests.add(1, { loop, outcome: isPermanentRefusal(err) ? 'refused' : 'retried' });
        throw err;
      }
    };
  // Kept in order, each write waiting for another writer's lock without holding up the request.
  const writes = new WriteQueue((what, err) => log.warn(`${what} not recorded for keeper status`, { error: oneLine(err) }));
  const kept = (loop: LoopName) => (f: FailingRequest | undefined) =>
    void writes.push(`the ${loop} run request's failure`, () =>
      f
        ? recordRequestFailure(db, hostId, { loop, ...f, failingSince: Math.floor(f.sinceMs / 1000) }, unixSeconds(deps.clock))
        : clearRequestFailure(db, hostId, loop),
    );
  const make = ({ name: loop, request }: Loop) => {
    const send: Send = (why, serviceId) => request(client, hostId, why, serviceId);
    return new LoopRequester({
      loop,
      send: counted(loop, send),
      log,
      isPermanent: isPermanentRefusal,
      onFailing: kept(loop),
      clock: deps.clock,
    });
  };
  clearRequestFailure(db, hostId);
  return Object.fromEntries(LOOPS.map((l) => [l.name, make(l)])) as HostRequests;
}

/** The Docker event watcher: it requests a reconcile tick when an ah container changes. */
export function createEventWatcher(
  { settings, deps }: WatchParts,
  requests: HostRequests,
  opts: Pick<EventWatcherOptions, 'reconnect'>,
): EventWatcher {
  return new EventWatcher({
    db: deps.db,
    hints: deps.hints ?? new EventHints(),
    docker: deps.docker,
    hostId: settings.hostId,
    log: deps.log.child({ loop: 'events' }),
    debounceMs: settings.eventDebounceMs,
    // Once a restarted container has run long enough to count as back up, and a second more.
    requestAfterStartMs: (BACK_UP_AFTER_SEC + 1) * 1000,
    request: async (serviceId) => (await requests.reconcile.request('docker events', serviceId)) === 'taken',
    clock: deps.clock,
    metrics: deps.metrics,
    ...opts,
  });
}

/** The disk watcher: it requests a GC sweep when a guarded path crosses the block threshold. */
export function createDiskWatcher(
  { deps }: WatchParts,
  requests: HostRequests,
  opts: Pick<DiskWatcherOptions, 'intervalMs' | 'cooldownMs'>,
): DiskWatcher {
  return new DiskWatcher({
    deps: { ...deps, log: deps.log.child({ loop: 'disk' }) },
    requestSweep: async () => (await requests.gc.request('disk pressure')) === 'taken',
    ...opts,
  });
}

/** The local looks, each loop's at its --*-look-interval; the event watcher, when given, is their event path. */
export function createLooks(
  { settings, deps }: WatchParts,
  requests: HostRequests,
  opts: { eventPath?: EventPath; intervalsMs?: Partial<Record<LoopName, number>> },
): LookRunner {
  // In order, each waiting for another writer's lock awaited; a look does not wait for its own record.
  const lookStates = new WriteQueue((what, err) => deps.log.warn(`${what} not recorded for keeper status`, { error: oneLine(err) }));
  return new LookRunner({
    looks: hostLooks(settings, deps, opts.intervalsMs ?? {}),
    view: () => new EngineView(deps.docker),
    request: (loop, why, serviceId) => requests[loop as LoopName].request(why, serviceId),
    lastRunFinishedAtMs: (loop) => {
      const at = lastLoopResult(deps.db, loop)?.finishedAt;
      return at === undefined ? undefined : at * 1000;
    },
    eventPath: opts.eventPath,
    passedOver: (changeAtMs, lookStartedMs) => deps.hints?.passedOver(changeAtMs, lookStartedMs) ?? false,
    record: (loop, o) => {
      const report = o.error === undefined ? { found: o.items.length, requested: o.requested } : { error: o.error };
      const nowSec = unixSeconds(deps.clock);
      return lookStates.push(`the ${loop} look's state`, () => recordLookState(deps.db, settings.hostId, loop, report, nowSec));
    },
    log: deps.log,
    clock: deps.clock,
    metrics: deps.metrics,
  });
}

/** Each loop's local look, at its interval (or the one given), the first no sooner than its first delay. */
function hostLooks(settings: Settings, deps: HostDeps, intervalsMs: Partial<Record<LoopName, number>>): LoopLook[] {
  return LOOPS.flatMap(({ name, look }) => {
    if (!look) return [];
    const everyMs = intervalsMs[name] ?? settings[look.every];
    const firstAfterMs = Math.max(everyMs, look.firstDelay ? settings[look.firstDelay] : 0);
    return [{ loop: name, everyMs, firstAfterMs, look: (view) => look.find(deps, view) }];
  });
}

/** The three, over one set of requests, with the event watcher as the looks' event path. */
export function createHostWatch(parts: WatchParts, requests: HostRequests): HostWatch {
  const events = createEventWatcher(parts, requests, {});
  const disk = createDiskWatcher(parts, requests, {});
  const looks = createLooks(parts, requests, { eventPath: events });
  return {
    events,
    disk,
    looks,
    requests,
    start() {
      events.start();
      disk.start();
      looks.start();
    },
    async stop() {
      await Promise.all(Object.values(requests).map((r) => r.stop()));
      await looks.stop();
      await events.stop();
      await disk.stop();
    },
  };
}
