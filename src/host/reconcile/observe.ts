/**
 * The reconcile tick's observation: the engine's containers (one list, src/watch/engine-view.ts, filtered by label
 * here: services, databases, environments), SQLite, and an inspect only for the containers that may have changed
 * since keeper's last snapshot of them. It acts on nothing: it returns what changed, which the apply step acts on
 * with compare-and-set writes. Its one write is bookkeeping of the snapshots: those it confirmed unchanged move
 * their time forward (touchSnapshots), which changes no state.
 */
import pLimit from 'p-limit';
import type { CrashPolicy, ServiceCrashRules, TickObservation } from '../../contracts/reconcile';
import type { ContainerSummary } from '../../docker/engine';
import { DockerError } from '../../docker/errors';
import { whenWritable } from '../../db/busy';
import { lastRecordedAt } from '../../db/crash-records';
import { keeperArrivedAt } from '../../db/keeper-hosts';
import { readSnapshots, touchSnapshots, type StoredSnapshot } from '../../db/container-snapshots';
import { readServices, type ServiceRow } from '../../db/services';
import { isUnhealthy, mayHaveChangedSince, statusAgeLowerBound } from '../../policy/container-status';
import { deathsFound, deathsShown } from '../../policy/deaths';
import type { CountedBefore } from '../../policy/deaths/evidence';
import { BACK_UP_AFTER_SEC } from '../../policy/deaths/shown';
import { serviceCrashPolicy } from '../../policy/service-crash-policy';
import { containerIdProblem, inFlightOutcome, isValidContainerId, serviceRowProblem, type ContainerCondition } from '../../policy/rows';
import type { HostDeps } from '../deps';
import { EngineView } from '../../watch/engine-view';
import {
  addFound,
  crashEventsFromMs,
  deathEvidence,
  NO_EVENTS_NEEDED,
  readDeathEvents,
  sameSnapshot,
  settleCrashes,
  type EventsRead,
  type PendingCrash,
} from './crash-evidence';
import { engineStartedAtSec } from '../engine-start';
import { indexById, Inspector, type Listed } from './inspector';
import { emptyObservation } from './observation';
import { observeDatabases, observeEnvironments } from './observe-hosted';
import { confirmOomKills, deathsAwaitingOomAt, oomEventsFromMs } from './oom-confirmations';
import { findOpenCircuitsRunning } from './open-circuits';
import { LABEL, RESOURCE_TYPE } from '../../names';
import { crashSettingParsers } from '../../settings';
import { unixSeconds } from '../../time';

/** Inspects at once: enough to hide round trips, few enough not to crowd the engine. */
export const INSPECT_CONCURRENCY = 8;
const WATCHED_STATUSES = new Set(['running', 'crashed']);

export async function observeHost(
  deps: Pick<HostDeps, 'db' | 'docker' | 'settings' | 'clock' | 'hints'>,
  policy: CrashPolicy,
  now: number,
  view: EngineView = new EngineView(deps.docker),
): Promise<TickObservation> {
  const { db, docker } = deps;
  const obs = emptyObservation(now);
  const services = readServices(db);
  const watched = services.filter((s) => isWatched(s, obs));
  let lists: ContainerSummary[][];
  try {
    lists = await Promise.all([
      view.labelled({ [LABEL.service]: true }),
      view.labelled({ [LABEL.type]: RESOURCE_TYPE.database }),
      view.labelled({ [LABEL.type]: RESOURCE_TYPE.environment }),
    ]);
  } catch (err) {
    if (!(err instanceof DockerError)) throw err;
    obs.dockerError = err.message;
    return obs;
  }
  // The list's status texts ("Up 40 seconds") count from when the engine answered, which a slow engine makes later
  // than `now`: their ages are read against a time no earlier than the answer, or a start that came after `now`
  // would read as before it, and the snapshot it replaces would be kept (its death never inspected).
  const listedAt = unixSeconds(deps.clock);
  const [serviceList, databaseList, environmentList] = lists.map(indexById);
  const inspector = new Inspector(docker, obs);
  const limit = pLimit(INSPECT_CONCURRENCY);
  const observer = serviceObserver({
    listed: serviceList,
    listedAt,
    snapshots: readSnapshots(db),
    countedBefore: (s) => countedBeforeOf(db, s),
    inspector,
    policy,
    obs,
    hinted: (containerId, sinceSec) => deps.hints?.eventSince(containerId, sinceSec * 1000) ?? false,
    engineStopGraceMs: deps.settings.engineStopGraceMs,
    engineStartedAt: once(() => engineStartedAtSec(docker)),
  });
  await Promise.all(watched.map((s) => limit(() => observer.observe(s))));
  await settleDeaths(deps, observer.pending, obs);
  await whenWritable('the unchanged snapshots touched', () => touchSnapshots(db, observer.unchanged, now));
  obs.unchanged = observer.unchanged.length;
  await observeInFlight(services, serviceList, inspector, limit, obs);
  findSplitBrain(services, serviceList, obs);
  findOpenCircuitsRunning(services, serviceList, obs);
  await observeDatabases(db, databaseList, inspector, limit, obs);
  await observeEnvironments(db, environmentList, inspector, limit, obs);
  return obs;
}

/** What the service row and keeper's records of its container counted before: a first snapshot's baseline. */
function countedBeforeOf(db: HostDeps['db'], s: ServiceRow): CountedBefore {
  return {
    status: s.status,
    lastCrashedAt: s.lastCrashedAt,
    crashWindowStart: s.crashWindowStart,
    lastRecordedAt: lastRecordedAt(db, s.id, s.containerId as string),
    keeperArrivedAt: keeperArrivedAt(db),
  };
}

/**
 * Gathered so far: the list and the inspects. Now the engine's events, read once for the deaths and the OOM kills
 * alike; then decided (the pure story, src/policy/deaths/) for what the events covered, and held for what they did not.
 */
async function settleDeaths(
  deps: Pick<HostDeps, 'db' | 'docker' | 'settings' | 'clock'>,
  pending: PendingCrash[],
  obs: TickObservation,
): Promise<void> {
  const nowMs = deps.clock.nowMs();
  const awaitingOom = deathsAwaitingOomAt(deps.db, nowMs);
  const events = await readTickEvents(deps.docker, [crashEventsFromMs(pending), oomEventsFromMs(awaitingOom)], nowMs, obs);
  const held = settleCrashes(pending, events, obs, nowMs, deps.settings.engineStopGraceMs);
  if (held > 0) obs.deathsHeld = held;
  confirmOomKills(awaitingOom, events, obs);
}

/** The tick's one read of the engine's death events, from the earliest moment a part of it needs; none when none does. */
async function readTickEvents(
  docker: HostDeps['docker'],
  fromMs: (number | undefined)[],
  nowMs: number,
  obs: TickObservation,
): Promise<EventsRead> {
  const needed = fromMs.filter((ms): ms is number => ms !== undefined);
  if (needed.length === 0) return NO_EVENTS_NEEDED;
  return readDeathEvents(docker, Math.min(...needed), nowMs, obs);
}

/** A read made at most once, when first wanted, and shared by whoever wants it after. */
function once<T>(read: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => (made ??= read());
}

/** Rows keeper cannot trust are reported and skipped; they never abort the tick, and are never repaired. */
function isWatched(s: ServiceRow, obs: TickObservation): boolean {
  const report = (problem: string) => (obs.problems.push({ subject: `service:${s.id}`, problem }), false);
  const rowProblem = serviceRowProblem(s);
  if (rowProblem) return report(rowProblem);
  if (!WATCHED_STATUSES.has(s.status) || s.circuitOpen !== 0) return false;
  const idProblem = containerIdProblem(s.status, s.containerId);
  return idProblem ? report(idProblem) : true;
}

/**
 * In-flight rows (created, restarting; deploying is left to its timeout) whose container the list does not
 * show: one inspect each tells a 404 from an engine error. A listed container is present: nothing to do.
 */
async function observeInFlight(
  services: ServiceRow[],
  listed: Listed,
  inspector: Inspector,
  limit: ReturnType<typeof pLimit>,
  obs: TickObservation,
): Promise<void> {
  const unlisted = services.filter(
    (s) =>
      s.circuitOpen === 0 &&
      !serviceRowProblem(s) &&
      inFlightOutcome(s.status, 'missing') &&
      isValidContainerId(s.containerId) &&
      !listed.find(s.containerId),
  );
  await Promise.all(
    unlisted.map((s) =>
      limit(async () => {
        const containerId = s.containerId as string;
        const details = await inspector.inspect(containerId, `service ${s.id}`);
        const condition: ContainerCondition = typeof details === 'string' ? details : details.status === 'running' ? 'running' : 'exited';
        const outcome = inFlightOutcome(s.status, condition);
        if (outcome) (obs.vanished ??= []).push({ serviceId: s.id, containerId, fromStatus: s.status, ...outcome });
      }),
    ),
  );
}

interface ServiceContext {
  listed: Listed;
  /** When the list had answered (unix s): its status texts' ages count from no later than this. */
  listedAt: number;
  snapshots: Map<string, StoredSnapshot>;
  /** What the service row and keeper's records of its container counted before: a first snapshot's baseline. */
  countedBefore: (s: ServiceRow) => CountedBefore;
  inspector: Inspector;
  policy: CrashPolicy;
  obs: TickObservation;
  /** The worker's event watcher heard of the container at or after `sinceSec` (unix seconds). */
  hinted: (containerId: string, sinceSec: number) => boolean;
  engineStopGraceMs: number;
  /** When the engine last started: read once per observation, and only if a container started since keeper's look. */
  engineStartedAt: () => Promise<number | null>;
}

/**
 * Observes watched services one by one, collecting those confirmed unchanged since keeper's last look, and the
 * deaths whose story waits for the engine's events (settleCrashes reads them once for all).
 */
function serviceObserver(ctx: ServiceContext) {
  const unchanged: string[] = [];
  const pending: PendingCrash[] = [];
  const { obs } = ctx;
  const backUp = (s: ServiceRow, running: boolean, upSec: number | null) => {
    if (s.status === 'crashed' && running && upSec !== null && upSec >= BACK_UP_AFTER_SEC) {
      obs.backUp.push({ serviceId: s.id, containerId: s.containerId as string });
    }
  };
  async function observe(s: ServiceRow): Promise<void> {
    obs.checked++;
    const containerId = s.containerId as string;
    const stored = ctx.snapshots.get(s.id) ?? null;
    const previous = stored && stored.containerId === containerId ? stored : null;
    const summary = ctx.listed.find(containerId);
    // An event since the last snapshot is a hint that the list may not show yet: the list lags a death's `die` event.
    if (summary && previous && !ctx.hinted(containerId, previous.seenAt - 1) && unchangedSince(summary, previous, ctx.listedAt)) {
      rulesOf(s, summary.labels, ctx.policy, obs);
      unchanged.push(s.id);
      return backUp(s, summary.state === 'running', statusAgeLowerBound(summary.status));
    }
    const details = await ctx.inspector.inspect(containerId, `service ${s.id}`);
    if (details === 'transient') return;
    const rules = rulesOf(s, summary?.labels ?? (details === 'missing' ? undefined : details.labels), ctx.policy, obs);
    const windowSec = (rules?.policy ?? ctx.policy).windowSec;
    const startedSince = previous && details !== 'missing' && details.startedAt >= previous.seenAt;
    const engineStartedAtSec = startedSince ? await ctx.engineStartedAt() : undefined;
    const countedBefore = () => ctx.countedBefore(s);
    const evidence = deathEvidence(s, { stored, details, rules, windowSec, nowSec: obs.now, countedBefore, engineStartedAtSec });
    const shown = deathsShown(evidence);
    if (shown.kind === 'gone') return void obs.gone.push({ serviceId: s.id, containerId });
    if (shown.kind === 'deaths') {
      // A gone container's story needs no events: nothing of its deaths is left to read.
      if (shown.eventsToRead) pending.push({ ...shown, eventsToRead: shown.eventsToRead });
      else addFound(obs, shown, deathsFound(shown, [], obs.now * 1000, ctx.engineStopGraceMs));
      return;
    }
    const { current } = evidence;
    if (!stored || !sameSnapshot(stored, current)) obs.looks.push({ serviceId: s.id, expected: stored, next: current });
    else unchanged.push(s.id);
    backUp(s, current.state === 'running', evidence.upSec);
  }
  return { observe, unchanged, pending };
}

/** The service's crash policy from its container's labels (undefined: labels unknown, the host's applies). */
function rulesOf(
  s: ServiceRow,
  labels: Record<string, string> | undefined,
  host: CrashPolicy,
  obs: TickObservation,
): ServiceCrashRules | undefined {
  if (!labels) return undefined;
  const { problems, ...rules } = serviceCrashPolicy(s.id, labels, host, crashSettingParsers);
  (obs.labelsChecked ??= []).push(s.id);
  if (problems.length > 0) (obs.labelProblems ??= []).push({ serviceId: s.id, problems });
  return rules;
}

/** The list proves nothing happened to this container since the last look: same state, no start or stop since. */
function unchangedSince(c: ContainerSummary, previous: StoredSnapshot, nowSec: number): boolean {
  return (
    c.state === previous.state &&
    isUnhealthy(c.status) === (previous.health === 'unhealthy') &&
    !mayHaveChangedSince(c.status, previous.seenAt, nowSec)
  );
}

const short = (id: string | null | undefined) => (id ?? '').slice(0, 12);

/** Containers labelled ah.service that the DB does not know, or knows under another container: reported only. */
function findSplitBrain(services: ServiceRow[], listed: Listed, obs: TickObservation): void {
  const byId = new Map(services.map((s) => [s.id, s]));
  for (const c of listed.all) {
    const serviceId = c.labels[LABEL.service];
    const service = byId.get(serviceId);
    const dbContainerId = service?.containerId ?? '';
    if (!service || !dbContainerId || !c.id.startsWith(dbContainerId)) {
      obs.splitBrain.push({ containerId: short(c.id), serviceId, dbContainerId: short(dbContainerId) });
    } else if (c.labels[LABEL.tenant] !== service.tenantId) {
      obs.problems.push({
        subject: `container:${short(c.id)}`,
        problem: `label ${LABEL.tenant}="${c.labels[LABEL.tenant] ?? ''}" names another tenant than service ${serviceId}'s`,
      });
    }
  }
}
