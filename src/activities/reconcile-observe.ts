/**
 * The reconcile tick's observation: three label-filtered container lists, SQLite, and an inspect only for the
 * containers that may have changed since keeper's last look. It changes no state (it only moves the time of
 * looks it confirmed); it returns what changed, which the apply step acts on with compare-and-set writes.
 */
import type { ContainerDetails, ContainerSummary, DockerClient } from '../docker/client';
import { DockerError } from '../docker/client';
import { readDatabases, readEnvironments, type HostedRow } from '../db/hosted';
import { readLooks, touchLooks, type StoredLook } from '../db/looks';
import type { StateDb } from '../db/open';
import { readServices, type CrashRecord, type ServiceRow } from '../db/services';
import { isUnhealthy, mayHaveChangedSince, statusAgeLowerBound } from '../policy/container-status';
import { deathsBetween, isDown, type ContainerLook, type CrashPolicy } from '../policy/crash';

/** A container that has run this long again takes its service back to `running`. */
export const BACK_UP_AFTER_SEC = 10;
const INSPECT_CONCURRENCY = 8;
const KNOWN_STATUSES = new Set(['created', 'deploying', 'running', 'stopped', 'crashed', 'failed', 'restarting']);
const WATCHED = new Set(['running', 'crashed']);

export interface Problem {
  subject: string; // e.g. service:<id>, container:<id12>
  problem: string;
}

export interface TickObservation {
  now: number;
  dockerError?: string; // set when the engine did not answer the lists: no Docker step runs
  checked: number;
  inspected: number;
  transientErrors: number;
  transientSamples: string[]; // the first few, for the log
  crashes: (CrashRecord & { restart: boolean })[];
  looks: { serviceId: string; expected: ContainerLook | null; next: ContainerLook }[];
  unchanged: number; // containers confirmed unchanged since keeper's last look
  backUp: { serviceId: string; containerId: string }[];
  gone: { serviceId: string; containerId: string }[];
  databases: { id: string; from: string; to: string }[];
  environmentsDown: { id: string; reason: string }[];
  environmentStops: { id: string; containerId: string }[];
  splitBrain: { containerId: string; serviceId: string; dbContainerId: string }[];
  problems: Problem[];
}

export function validContainerId(id: string | null | undefined): boolean {
  return typeof id === 'string' && /^[0-9a-f]{12,64}$/.test(id);
}

const short = (id: string | null | undefined) => (id ?? '').slice(0, 12);

export async function observeHost(db: StateDb, docker: DockerClient, policy: CrashPolicy, now: number): Promise<TickObservation> {
  const obs: TickObservation = {
    now, checked: 0, inspected: 0, transientErrors: 0, transientSamples: [], crashes: [], looks: [], unchanged: 0, backUp: [], gone: [],
    databases: [], environmentsDown: [], environmentStops: [], splitBrain: [], problems: [],
  };
  const services = readServices(db);
  const watched = services.filter((s) => saneService(s, obs.problems));
  let lists: [ContainerSummary[], ContainerSummary[], ContainerSummary[]];
  try {
    lists = await Promise.all([
      docker.listContainers({ 'ah.service': true }),
      docker.listContainers({ 'ah.type': 'database' }),
      docker.listContainers({ 'ah.type': 'environment' }),
    ]);
  } catch (err) {
    if (!(err instanceof DockerError)) throw err;
    obs.dockerError = err.message;
    return obs;
  }
  const [serviceList, databaseList, environmentList] = lists.map(indexById);
  const inspector = new Inspector(docker, obs);
  const looks = readLooks(db);
  const unchanged: string[] = [];
  await forEachLimited(watched, (s) => observeService(s, serviceList, looks.get(s.id), inspector, policy, obs, unchanged));
  // Bookkeeping of the look itself, not an action: the looks' state is unchanged, only confirmed as of now.
  touchLooks(db, unchanged, now);
  obs.unchanged = unchanged.length;
  findSplitBrain(services, serviceList, obs);
  await forEachLimited(readDatabases(db), (d) => observeDatabase(d, databaseList, inspector, obs));
  await forEachLimited(readEnvironments(db), (e) => observeEnvironment(e, environmentList, inspector, obs));
  return obs;
}

const isCount = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v) && v >= 0;
/** Unix seconds SQLite holds as an integer: what a timer and the expiry query can use. */
const isSeconds = (v: unknown): boolean => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** Rows keeper cannot trust are reported and skipped; they never abort the tick, and are never repaired. */
function saneService(s: ServiceRow, problems: Problem[]): boolean {
  const subject = `service:${s.id}`;
  // Quoted values are cut: a 100 kB status in every problem made the observation exceed Temporal's payload limit.
  if (!KNOWN_STATUSES.has(s.status)) return problems.push({ subject, problem: `unknown status "${String(s.status).slice(0, 70)}"` }), false;
  // SQLite stores any type in any column: 'abc' or 2.5 would otherwise flow into the crash arithmetic.
  if (!isCount(s.crashCount) || !isCount(s.circuitOpenCount)) {
    const show = (v: unknown) => JSON.stringify(v).slice(0, 40);
    return problems.push({ subject, problem: `count not a non-negative integer (crash_count=${show(s.crashCount)}, circuit_open_count=${show(s.circuitOpenCount)})` }), false;
  }
  // An open circuit needs a whole number of seconds to wait for: with NULL, text or a fraction no timer is set
  // and the tick's expiry never matches it, so it would stay open until an operator resets it.
  if (s.circuitOpen === 1 && !isSeconds(s.circuitRetryAt)) {
    return problems.push({ subject, problem: `open circuit with circuit_retry_at=${JSON.stringify(s.circuitRetryAt).slice(0, 40)}, not a time: reset it with keeper circuit reset` }), false;
  }
  if (!WATCHED.has(s.status) || s.circuitOpen !== 0) return false;
  if (!validContainerId(s.containerId)) {
    const what = s.containerId === null ? 'NULL' : s.containerId === '' ? 'empty' : `malformed "${s.containerId.slice(0, 70)}"`;
    return problems.push({ subject, problem: `${s.status} with ${what} container_id` }), false;
  }
  return true;
}

async function observeService(
  s: ServiceRow,
  listed: Listed,
  stored: StoredLook | undefined,
  inspector: Inspector,
  policy: CrashPolicy,
  obs: TickObservation,
  unchanged: string[],
): Promise<void> {
  obs.checked++;
  const cid = s.containerId as string;
  const summary = listed.find(cid);
  const prev = stored && stored.containerId === cid ? stored : null;
  if (summary && prev && unchangedSince(summary, prev, obs.now)) {
    unchanged.push(s.id);
    const up = statusAgeLowerBound(summary.status);
    if (s.status === 'crashed' && summary.state === 'running' && up !== null && up >= BACK_UP_AFTER_SEC) {
      obs.backUp.push({ serviceId: s.id, containerId: cid });
    }
    return;
  }
  const details = await inspector.inspect(cid, `service ${s.id}`);
  if (details === 'transient') return;
  const next: ContainerLook = details === 'missing'
    ? { containerId: cid, state: 'missing', restartCount: prev?.restartCount ?? 0, health: '' }
    : { containerId: cid, state: details.status, restartCount: details.restartCount, health: details.health };
  if (details === 'missing' && s.status === 'crashed') {
    if (prev?.state === 'missing' || !prev) obs.gone.push({ serviceId: s.id, containerId: cid });
    else obs.crashes.push(crash(s, stored ?? null, next, 1, 'container not found by reconciler', 'crashed', false));
    return;
  }
  const createdAt = details === 'missing' ? 0 : details.createdAt;
  const deaths = deathsBetween(prev, next, createdAt, obs.now, policy.windowSec);
  const unhealthy = next.health === 'unhealthy' && prev?.health !== 'unhealthy' && next.state === 'running';
  const upFor = details === 'missing' || !details.startedAt ? 0 : obs.now - details.startedAt;
  if (deaths > 0 || unhealthy) {
    const down = isDown(next.state) || next.state === 'restarting' || unhealthy || upFor < BACK_UP_AFTER_SEC;
    const reason = unhealthy ? 'container unhealthy (health check failed)' : crashReason(next, details, deaths);
    obs.crashes.push(crash(s, stored ?? null, next, deaths + (unhealthy ? 1 : 0), reason, down ? 'crashed' : 'running', unhealthy));
    return;
  }
  if (!stored || !sameLook(stored, next)) obs.looks.push({ serviceId: s.id, expected: stored ?? null, next });
  else unchanged.push(s.id);
  if (s.status === 'crashed' && next.state === 'running' && upFor >= BACK_UP_AFTER_SEC) {
    obs.backUp.push({ serviceId: s.id, containerId: cid });
  }
}

function crash(
  s: ServiceRow, expected: ContainerLook | null, next: ContainerLook, deaths: number, reason: string,
  statusAfter: 'crashed' | 'running', restart: boolean,
): TickObservation['crashes'][number] {
  const exp = expected && { containerId: expected.containerId, state: expected.state, restartCount: expected.restartCount, health: expected.health };
  return { serviceId: s.id, containerId: s.containerId as string, expectedLook: exp, nextLook: next, deaths, reason, statusAfter, restart };
}

function crashReason(next: ContainerLook, details: ContainerDetails | 'missing', deaths: number): string {
  if (details === 'missing') return 'container not found by reconciler';
  if (isDown(next.state)) return `container ${next.state} (exit code ${details.exitCode})`;
  return `container restarted by Docker after ${deaths} crash${deaths === 1 ? '' : 'es'}`;
}

/** The list proves nothing happened to this container since the last look: same state, no start or stop since. */
function unchangedSince(c: ContainerSummary, prev: StoredLook, now: number): boolean {
  return c.state === prev.state
    && isUnhealthy(c.status) === (prev.health === 'unhealthy')
    && !mayHaveChangedSince(c.status, prev.lookedAt, now);
}

function sameLook(a: ContainerLook, b: ContainerLook): boolean {
  return a.containerId === b.containerId && a.state === b.state && a.restartCount === b.restartCount && a.health === b.health;
}

/** Containers labelled ah.service that the DB does not know, or knows under another container: reported only. */
function findSplitBrain(services: ServiceRow[], listed: Listed, obs: TickObservation): void {
  const byId = new Map(services.map((s) => [s.id, s]));
  for (const c of listed.all) {
    const sid = c.labels['ah.service'];
    const svc = byId.get(sid);
    const dbCid = svc?.containerId ?? '';
    if (!svc || !dbCid || !c.id.startsWith(dbCid)) {
      obs.splitBrain.push({ containerId: short(c.id), serviceId: sid, dbContainerId: short(dbCid) });
    } else if (c.labels['ah.tenant'] !== svc.tenantId) {
      obs.problems.push({ subject: `container:${short(c.id)}`, problem: `label ah.tenant="${c.labels['ah.tenant'] ?? ''}" names another tenant than service ${sid}'s` });
    }
  }
}

async function observeDatabase(d: HostedRow, listed: Listed, inspector: Inspector, obs: TickObservation): Promise<void> {
  if (!validContainerId(d.containerId)) {
    if (d.status === 'ready') obs.problems.push({ subject: `database:${d.id}`, problem: 'ready with a missing or malformed container_id' });
    return;
  }
  obs.checked++;
  const state = await containerState(d.containerId as string, listed, inspector, `database ${d.id}`);
  if (state === 'transient') return;
  if (d.status === 'ready' && (state === 'missing' || isDown(state))) obs.databases.push({ id: d.id, from: 'ready', to: 'unavailable' });
  if (d.status === 'unavailable' && state === 'running') obs.databases.push({ id: d.id, from: 'unavailable', to: 'ready' });
}

async function observeEnvironment(e: HostedRow, listed: Listed, inspector: Inspector, obs: TickObservation): Promise<void> {
  if (!validContainerId(e.containerId)) {
    if (e.status === 'running') obs.problems.push({ subject: `environment:${e.id}`, problem: 'running with a missing or malformed container_id' });
    return;
  }
  obs.checked++;
  if (e.status === 'stopped') {
    // A lease that expired stops its container once: only while the list still shows it running.
    const c = listed.find(e.containerId as string);
    if (c?.state === 'running' && e.leaseExpiresAt !== null && e.leaseExpiresAt < obs.now) obs.environmentStops.push({ id: e.id, containerId: c.id });
    return;
  }
  const state = await containerState(e.containerId as string, listed, inspector, `environment ${e.id}`);
  if (state === 'missing') obs.environmentsDown.push({ id: e.id, reason: 'container not found' });
  else if (state !== 'transient' && isDown(state)) obs.environmentsDown.push({ id: e.id, reason: `container ${state}` });
}

async function containerState(cid: string, listed: Listed, inspector: Inspector, what: string): Promise<string> {
  const c = listed.find(cid);
  if (c) return c.state;
  const d = await inspector.inspect(cid, what);
  return typeof d === 'string' ? d : d.status;
}

class Inspector {
  constructor(private readonly docker: DockerClient, private readonly obs: TickObservation) {}

  /** 404 is `missing`; every other error is transient: skipped, never counted (W-11). */
  async inspect(cid: string, what: string): Promise<ContainerDetails | 'missing' | 'transient'> {
    this.obs.inspected++;
    try {
      return await this.docker.inspectContainer(cid);
    } catch (err) {
      if (!(err instanceof DockerError)) throw err;
      if (err.isNotFound) return 'missing';
      this.obs.transientErrors++;
      this.obs.transientSamples.length < 3 && this.obs.transientSamples.push(`${what}: ${err.message}`);
      return 'transient';
    }
  }
}

interface Listed {
  all: ContainerSummary[];
  find(id: string): ContainerSummary | undefined;
}

function indexById(list: ContainerSummary[]): Listed {
  const byId = new Map(list.map((c) => [c.id, c]));
  return {
    all: list,
    find: (id) => byId.get(id) ?? (id.length < 64 ? list.find((c) => c.id.startsWith(id)) : undefined),
  };
}

async function forEachLimited<T>(items: T[], fn: (item: T) => Promise<void>, limit = INSPECT_CONCURRENCY): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
