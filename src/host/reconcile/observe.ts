/**
 * The reconcile tick's observation: the engine's containers (one list, src/watch/engine-view.ts, filtered by label
 * here: services, databases, environments), SQLite, and an inspect only for the containers that may have changed
 * since keeper's last snapshot of them. It acts on nothing: it returns what changed, which the apply step acts on
 * with compare-and-set writes. Its one write is bookkeeping of the snapshots: those it confirmed unchanged move
 * their time forward (touchSnapshots), which changes no state.
 */
import pLimit from 'p-limit';
import type { ContainerSnapshot, CountedDeath, CrashPolicy, ServiceCrashRules, TickObservation } from '../../contracts/reconcile';
import type { ContainerDetails, ContainerSummary } from '../../docker/engine';
import { DockerError } from '../../docker/errors';
import { whenWritable } from '../../db/busy';
import { lastRecordedAt } from '../../db/crash-records';
import { keeperArrivedAt } from '../../db/keeper-hosts';
import { readSnapshots, touchSnapshots, type StoredSnapshot } from '../../db/container-snapshots';
import { readServices, type ServiceRow } from '../../db/services';
import { isUnhealthy, mayHaveChangedSince, statusAgeLowerBound } from '../../policy/container-status';
import { deathsBetween, firstSnapshotOf, isDown, type CountedBefore } from '../../policy/crash';
import { dateDeaths } from '../../policy/death-dating';
import { serviceCrashPolicy } from '../../policy/service-crash-policy';
import { containerIdProblem, inFlightOutcome, isValidContainerId, serviceRowProblem, type ContainerCondition } from '../../policy/rows';
import type { HostDeps } from '../deps';
import { EngineView } from '../../watch/engine-view';
import { asSnapshot, runStateOf, sameSnapshot, settleCrashes, type PendingCrash } from './crash-evidence';
import { indexById, Inspector, type Listed } from './inspector';
import { emptyObservation } from './observation';
import { observeDatabases, observeEnvironments } from './observe-hosted';
import { observeOomConfirmations } from './oom-confirmations';
import { findOpenCircuitsRunning } from './open-circuits';
import { LABEL, RESOURCE_TYPE } from '../../names';
import { crashSettingParsers } from '../../settings';
import { unixSeconds } from '../../time';

/** A container that has run this long again takes its service back to `running`. */
export const BACK_UP_AFTER_SEC = 10;
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
  const countedBefore = (s: ServiceRow): CountedBefore => ({
    status: s.status,
    lastCrashedAt: s.lastCrashedAt,
    crashWindowStart: s.crashWindowStart,
    lastRecordedAt: lastRecordedAt(db, s.id, s.containerId as string),
    keeperArrivedAt: keeperArrivedAt(db),
  });
  const observer = serviceObserver({
    listed: serviceList,
    listedAt,
    snapshots: readSnapshots(db),
    countedBefore,
    inspector,
    policy,
    obs,
    hinted: (containerId, sinceSec) => deps.hints?.eventSince(containerId, sinceSec * 1000) ?? false,
  });
  await Promise.all(watched.map((s) => limit(() => observer.observe(s))));
  await settleCrashes(docker, observer.pending, obs, deps.clock.nowMs(), deps.settings.engineStopGraceMs);
  await observeOomConfirmations(docker, db, deps.clock.nowMs(), obs);
  await whenWritable('the unchanged snapshots touched', () => touchSnapshots(db, observer.unchanged, now));
  obs.unchanged = observer.unchanged.length;
  await observeInFlight(services, serviceList, inspector, limit, obs);
  findSplitBrain(services, serviceList, obs);
  findOpenCircuitsRunning(services, serviceList, obs);
  await observeDatabases(db, databaseList, inspector, limit, obs);
  await observeEnvironments(db, environmentList, inspector, limit, obs);
  return obs;
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
}

/** Observes watched services one by one, collecting those confirmed unchanged since keeper's last snapshot. */
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
    const stored = ctx.snapshots.get(s.id);
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
    const current = snapshotOf(containerId, details, previous);
    if (details === 'missing' && s.status === 'crashed') {
      if (previous?.state === 'missing' || !previous) obs.gone.push({ serviceId: s.id, containerId });
      else
        obs.crashes.push(
          crashOf(s, stored ?? null, current, {
            deaths: 1,
            reason: 'container not found by reconciler',
            statusAfter: 'crashed',
            restart: false,
            facts: missingDeaths(1, previous, obs.now),
            rules,
          }),
        );
      return;
    }
    const upSec = details === 'missing' || !details.startedAt ? 0 : obs.now - details.startedAt;
    if (recordDeaths(ctx, pending, s, { stored: stored ?? null, previous, current, rules }, details, upSec)) return;
    if (!stored || !sameSnapshot(stored, current)) obs.looks.push({ serviceId: s.id, expected: stored ?? null, next: current });
    else unchanged.push(s.id);
    backUp(s, current.state === 'running', upSec);
  }
  return { observe, unchanged, pending };
}

/** Deaths since the previous snapshot, or a container that turned unhealthy: one crash, once its evidence is in. */
function recordDeaths(
  { obs, policy, countedBefore }: ServiceContext,
  pending: PendingCrash[],
  s: ServiceRow,
  {
    stored,
    previous,
    current,
    rules,
  }: { stored: StoredSnapshot | null; previous: StoredSnapshot | null; current: ContainerSnapshot; rules?: ServiceCrashRules },
  details: ContainerDetails | 'missing',
  upSec: number,
): boolean {
  const windowSec = (rules?.policy ?? policy).windowSec;
  const deaths = deathsBetween(previous, current, details === 'missing' ? 0 : details.createdAt, obs.now, windowSec);
  if (details === 'missing') {
    if (deaths === 0) return false;
    obs.crashes.push(
      crashOf(s, stored, current, {
        deaths,
        reason: 'container not found by reconciler',
        statusAfter: 'crashed',
        restart: false,
        facts: missingDeaths(deaths, previous, obs.now),
        rules,
      }),
    );
    return true;
  }
  const unhealthy = current.health === 'unhealthy' && previous?.health !== 'unhealthy' && current.state === 'running';
  // keeper's first snapshot of a container Docker restarted: its die events decide which deaths count.
  const firstSnapshot = previous ? undefined : firstSnapshotOf(details.createdAt, countedBefore(s), obs.now, windowSec);
  const mayHaveDied = firstSnapshot ? current.restartCount > 0 || isDown(current.state) : deaths > 0;
  if (!mayHaveDied && !unhealthy) return false;
  const down = isDown(current.state) || current.state === 'restarting' || unhealthy || upSec < BACK_UP_AFTER_SEC;
  pending.push({
    serviceId: s.id,
    containerId: s.containerId as string,
    fullId: details.id,
    stored: stored && asSnapshot(stored),
    current,
    deaths,
    unhealthy,
    downNow: isDown(current.state),
    statusAfter: down ? 'crashed' : 'running',
    run: runStateOf(details),
    sinceMs: firstSnapshot ? firstSnapshot.countFromMs : (previous as StoredSnapshot).seenAt * 1000,
    ...(firstSnapshot && {
      firstSnapshot,
      readFromMs: details.createdAt * 1000,
      backUpIfNoDeaths: s.status === 'crashed' && current.state === 'running' && upSec >= BACK_UP_AFTER_SEC,
    }),
    rules,
  });
  return true;
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

/** A container that is gone (404): nothing of its death is left to read. */
const MISSING: CountedDeath = { seenBy: 'missing', diedAtMs: null, exitCode: null, oomKilled: null, engineError: '', logWindow: null };

/** A vanished container's deaths lie somewhere since keeper's last snapshot: spread over that time. */
function missingDeaths(deaths: number, previous: StoredSnapshot | null, nowSec: number): CountedDeath[] {
  return dateDeaths(Array<CountedDeath>(deaths).fill(MISSING), { sinceMs: (previous?.seenAt ?? nowSec) * 1000, untilMs: nowSec * 1000 });
}

function snapshotOf(containerId: string, details: ContainerDetails | 'missing', previous: ContainerSnapshot | null): ContainerSnapshot {
  return details === 'missing'
    ? { containerId, state: 'missing', restartCount: previous?.restartCount ?? 0, health: '' }
    : { containerId, state: details.status, restartCount: details.restartCount, health: details.health };
}

function crashOf(
  s: ServiceRow,
  expected: ContainerSnapshot | null,
  next: ContainerSnapshot,
  what: {
    deaths: number;
    reason: string;
    statusAfter: 'crashed' | 'running';
    restart: boolean;
    facts: CountedDeath[];
    rules?: ServiceCrashRules;
  },
): TickObservation['crashes'][number] {
  return { serviceId: s.id, containerId: s.containerId as string, expectedLook: expected && asSnapshot(expected), nextLook: next, ...what };
}

/** The list proves nothing happened to this container since the last snapshot: same state, no start or stop since. */
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
