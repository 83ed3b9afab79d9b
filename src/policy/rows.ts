/**
 * Which state-DB rows the loops can trust. SQLite stores any type in any column and ah's rows can be edited by
 * hand, so a row is checked before the loops act on it; a row that fails is reported once and skipped, never
 * acted on or "repaired".
 */

/** Service statuses ah writes; any other value is not a state keeper knows how to keep. */
export const KNOWN_SERVICE_STATUSES: ReadonlySet<string> = new Set([
  'created',
  'deploying',
  'running',
  'stopped',
  'crashed',
  'failed',
  'restarting',
]);

/** A container id Docker could have made: 12 to 64 lower-case hex digits. */
export function isValidContainerId(id: string | null | undefined): id is string {
  return typeof id === 'string' && /^[0-9a-f]{12,64}$/.test(id);
}

/** A count column that holds what its name says: a non-negative integer (not 'abc', not 2.5). */
export function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0;
}

/** Unix seconds SQLite holds as an integer: what a timer and the expiry query can use. */
export function isUnixSeconds(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/** A value quoted in a problem report, cut: a 100 kB status in every report made results exceed Temporal's payload limit. */
export function quoted(v: unknown, maxChars = 70): string {
  return JSON.stringify(v ?? null).slice(0, maxChars);
}

export interface ServiceRowFields {
  id: string;
  status: string;
  containerId: string | null;
  crashCount: number;
  circuitOpen: number;
  circuitOpenCount: number;
  circuitRetryAt: number | null;
}

/** Why the tick cannot trust this service row, or undefined when it can. */
export function serviceRowProblem(s: ServiceRowFields): string | undefined {
  if (!KNOWN_SERVICE_STATUSES.has(s.status)) return `unknown status "${String(s.status).slice(0, 70)}"`;
  if (!isCount(s.crashCount) || !isCount(s.circuitOpenCount)) {
    return `count not a non-negative integer (crash_count=${quoted(s.crashCount, 40)}, circuit_open_count=${quoted(s.circuitOpenCount, 40)})`;
  }
  // With NULL, text or a fraction no timer can be set and the tick's expiry never matches: it would stay open.
  if (s.circuitOpen === 1 && !isUnixSeconds(s.circuitRetryAt)) {
    return `open circuit with circuit_retry_at=${quoted(s.circuitRetryAt, 40)}, not a time: reset it with keeper circuit reset`;
  }
  return undefined;
}

/** Why a watched service (running or crashed, circuit closed) has no container the tick can look at. */
export function containerIdProblem(status: string, containerId: string | null): string | undefined {
  if (isValidContainerId(containerId)) return undefined;
  const what = containerId === null ? 'NULL' : containerId === '' ? 'empty' : `malformed "${String(containerId).slice(0, 70)}"`;
  return `${status} with ${what} container_id`;
}

/**
 * Statuses ah leaves in flight (a deploy or restart under way, a row made but not deployed): the crash rules do
 * not apply, but a container that vanished from under them is a dead end nothing else examines (W-20).
 */
export const IN_FLIGHT_STATUSES: ReadonlySet<string> = new Set(['created', 'deploying', 'restarting']);

/** What the tick found of a row's container: listed or inspected, gone (404), or an engine error. */
export type ContainerCondition = 'running' | 'exited' | 'missing' | 'transient';

export interface InFlightOutcome {
  status: 'stopped';
  reason: string;
}

export const VANISHED_REASON = 'container not found by reconciler';

/**
 * The outcome for an in-flight row, or undefined to leave it. Only a 404 changes anything, and never for
 * `deploying`: ah may be swapping containers right then, so a vanished one is left to the stale-deploy timeout,
 * which fails it with its deployment row. An engine error changes nothing; a present container is ah's to run.
 */
export function inFlightOutcome(status: string, condition: ContainerCondition): InFlightOutcome | undefined {
  if (condition !== 'missing' || !IN_FLIGHT_STATUSES.has(status) || status === 'deploying') return undefined;
  return { status: 'stopped', reason: VANISHED_REASON };
}
