/**
 * The soak's ledger: every death Docker recorded, against keeper's crash records, container by container.
 *
 * Which deaths keeper must count, and which it must not (each death is one `die` of the engine's event stream, or
 * one unseen by it but shown by RestartCount: truth.ts):
 * - **crash** (must count once): the process died by itself or by the kernel's SIGKILL, Docker restarted it (a policy
 *   death), the service's circuit was closed at keeper's last look, and the exit code is not one its
 *   keeper.expected-exit-codes label lists. One keeper_crash_records row each (seen_by look, event, restart-count or
 *   missing; expected = 0).
 * - **expected exit** (recorded, never counted): the same with an exit code the label lists: one row each with
 *   expected = 1.
 * - **after the look that opened the circuit** (not counted): Docker numbered it above the RestartCount of keeper's
 *   look in the opening transaction, and it came before keeper's stop of the container. keeper counts no death of a
 *   service whose circuit is open; these are the loop's last throes until the stop (until the close, when dockerd's
 *   shutdown undid the stop; but a run dockerd began coming back after the retry time is the recovery's: S10).
 * - **keeper's stop of an open circuit's container**, **keeper's restart of an unhealthy container** (not a crash):
 *   the engine's `kill` came just before the `die` (an API stop), with a `restart` event after it for a restart.
 * - **stopped by dockerd's shutdown** (not a crash): the engine's own kill before the die, while dockerd shut down.
 * - **died by itself during dockerd's shutdown** (may be counted, once at most): the engine's next start sets
 *   RestartCount back to 0, so keeper counts it only if it looked in time.
 * - **died just before dockerd's shutdown** (may be counted, once at most): with less than LOOK_CHANCE_MS of keeper's
 *   sight between the death and the shutdown (truth.ts: the time less what blinding host faults took). The engine's restart then sets
 *   RestartCount back to 0, drops its events and overwrites the run's exit with the shutdown's stop, so only a look
 *   in those seconds could see it. (Deaths after the engine is back are crashes: keeper must count them from the new
 *   RestartCount.)
 * - **health failure** (one crash each, seen_by health-check): an unhealthy episode (the engine's `health_status:
 *   unhealthy`) that lasted until keeper restarted the container (or to the end); one that ended otherwise (the
 *   container died, dockerd restarted it, keeper stopped it for its circuit, or the check passed again by itself)
 *   may be counted, once at most.
 *
 * Per container, keeper's records are paired one to one with what Docker recorded, by time (matching.ts): every
 * death keeper must count has its record, and every record is of a death keeper must or may count; the same for
 * expected exits and health failures. Every difference is listed with the service, container and times.
 */
import type { StateDb } from '../../src/db/open';
import type { Received } from '../../test/helpers/webhook-receiver';
import type { ConsistencyResult } from './consistency';
import { matchRecords, MATCH_TOLERANCE_MS, type Matched, type Recorded, type Slot } from './matching';
import type { Opening } from './openings';
import type { SoakService } from './services';
import type { TimerCheck } from './timers';
import type { ContainerTruth, EngineWindows, TrueDeath, UnhealthyEpisode } from './truth';

export type DeathClass =
  | 'crash'
  | 'expected'
  | 'circuit-open'
  | 'keeper-stop'
  | 'keeper-restart'
  | 'engine-stop'
  | 'engine-stop-kept'
  | 'shutdown-self'
  | 'before-shutdown';

export interface KeeperRecord {
  id: number;
  serviceId: string;
  containerId: string;
  diedAtMs: number | null;
  exitCode: number | null;
  seenBy: string;
  datedBy: string | null;
  expected: number;
  recordedAt: number;
}

export interface ContainerLedger {
  service: SoakService;
  /** dockerd's shutdowns in the run, for the times a record of a death in one may carry. */
  engine: EngineWindows;
  deaths: { death: TrueDeath; cls: DeathClass }[];
  episodes: { episode: UnhealthyEpisode; must: boolean }[];
  counted: KeeperRecord[];
  expected: KeeperRecord[];
  health: KeeperRecord[];
}

export interface Balance {
  what: 'crashes' | 'expected exits' | 'health failures';
  must: number;
  may: number;
  keeper: number;
  /** Deaths (or episodes) keeper had to record and did not; records of nothing it had to or could record. */
  missed: number;
  extra: number;
}

export interface Imbalance {
  serviceId: string;
  containerId: string;
  balance: Balance;
  lines: string[];
}

export interface AlertLedger {
  openings: number;
  alerted: number;
  distinctKeys: number;
  problems: string[];
}

export interface Ledger {
  containers: ContainerLedger[];
  imbalances: Imbalance[];
  alerts: AlertLedger;
  timers: TimerCheck[];
  /** The same check once a minute during the run (timer-audit.ts). */
  audits: { audits: number; checked: number; skipped: number; problems: string[] };
  consistency: ConsistencyResult;
  truthProblems: string[];
  keeperStopsOutsideCircuits: string[];
  balanced: boolean;
}

export function readRecords(db: StateDb): KeeperRecord[] {
  return db
    .prepare(
      `SELECT id, service_id AS serviceId, container_id AS containerId, died_at_ms AS diedAtMs, exit_code AS exitCode,
              seen_by AS seenBy, dated_by AS datedBy, expected, recorded_at AS recordedAt
         FROM keeper_crash_records ORDER BY id`,
    )
    .all() as KeeperRecord[];
}

const isPolicy = (d: TrueDeath) => d.kind === 'policy' || d.kind === 'unseen';

/**
 * The deaths after the look that opened `o`, up to keeper's stop of the container (its `stop` event: a container
 * waiting in Docker's restart backoff is stopped without a die), numbered as truth.ts numbers them. Not a death of a
 * run dockerd began coming back from a restart after the circuit's retry time: keeper's recovery was under way by
 * then, and counts that run's deaths from 0 (S10).
 */
function openingTail(truth: ContainerTruth, o: Opening, engine: EngineWindows): Set<TrueDeath> {
  const openedMs = o.openedAtSec * 1000;
  const stop = truth.stops.find((m) => !m.restarted && !engine.inShutdown(m.atMs) && m.atMs >= openedMs - 1000);
  // Until keeper's stop, or the close (a recovery before a stop that came late), whichever is first.
  const endMs = Math.min(stop?.atMs ?? Infinity, o.closedSeenAtMs ?? Infinity);
  const before = truth.deaths.filter((d) => d.atMs <= openedMs + 1000);
  const epoch = before.length > 0 ? before[before.length - 1].epoch : 0;
  return new Set(
    truth.deaths.filter(
      (d) =>
        isPolicy(d) &&
        d.atMs <= endMs &&
        !engine.backBetween(o.retryAtSec * 1000, d.atMs) &&
        (d.epoch > epoch || (d.epoch === epoch && (d.number ?? 0) > o.lookRestartCount)),
    ),
  );
}

function classify(truth: ContainerTruth, s: SoakService, openings: Opening[], engine: EngineWindows) {
  const tail = new Set<TrueDeath>();
  for (const o of openings) for (const d of openingTail(truth, o, engine)) tail.add(d);
  return truth.deaths.map((death): { death: TrueDeath; cls: DeathClass } => {
    if (death.kind === 'stop' && !death.restarted && (engine.inShutdown(death.atMs) || death.foundByInspect))
      return { death, cls: downAfterGrace(truth, death) ? 'engine-stop-kept' : 'engine-stop' };
    if (death.kind === 'stop') return { death, cls: death.restarted ? 'keeper-restart' : 'keeper-stop' };
    if (death.kind === 'shutdown-self') return { death, cls: 'shutdown-self' };
    if (tail.has(death)) return { death, cls: 'circuit-open' };
    if (death.kind === 'policy' && engine.justBeforeShutdown(death.atMs)) return { death, cls: 'before-shutdown' };
    return { death, cls: death.exitCode !== undefined && s.expectedExitCodes.includes(death.exitCode) ? 'expected' : 'crash' };
  });
}

/** keeper's --engine-stop-grace, which the soak leaves at its default. */
const ENGINE_STOP_GRACE_MS = 120_000;

/**
 * A stop of dockerd's shutdown that the engine did not undo: an inspect found the container still down the grace
 * after it, with no death between. keeper counts such a stop once then, by design (the service stayed down).
 */
function downAfterGrace(truth: ContainerTruth, stop: TrueDeath): boolean {
  return truth.downSeenAtMs.some(
    (t) => t >= stop.atMs + ENGINE_STOP_GRACE_MS && truth.deaths.every((d) => d.atMs <= stop.atMs || d.atMs > t),
  );
}

/**
 * Deaths keeper may count or not (at most once): what only a look at the right moment could see, and a shutdown's
 * stop that left the service down past the grace (whether keeper looked before a later start is a matter of time).
 */
export const MAY_CLASSES: DeathClass[] = ['shutdown-self', 'before-shutdown', 'engine-stop-kept'];

export function containerLedger(
  s: SoakService,
  truth: ContainerTruth,
  openings: Opening[],
  records: KeeperRecord[],
  engine: EngineWindows,
): ContainerLedger {
  const own = records.filter((r) => r.containerId === s.containerId);
  return {
    service: s,
    engine,
    deaths: classify(
      truth,
      s,
      openings.filter((o) => o.containerId === s.containerId),
      engine,
    ),
    // Keeper's restart ended it, or it lasted to the end: one crash. One the container healed of by itself, or that
    // a death ended before keeper looked, may be counted.
    episodes: truth.episodes.map((episode) => ({
      episode,
      must: episode.endedBy ? episode.endedBy.restarted === true : episode.healedAtMs === undefined,
    })),
    counted: own.filter((r) => r.expected === 0 && r.seenBy !== 'health-check'),
    expected: own.filter((r) => r.expected === 1),
    health: own.filter((r) => r.expected === 0 && r.seenBy === 'health-check'),
  };
}

/** keeper's records that carry a time of their own (not spread over an interval it did not see). */
const TIMED = new Set(['live', 'event', 'run-times']);

function recorded(r: KeeperRecord): Recorded<KeeperRecord> {
  const timed = r.diedAtMs !== null && (r.seenBy === 'health-check' || (r.datedBy !== null && TIMED.has(r.datedBy)));
  return { ...(timed ? { atMs: r.diedAtMs! } : {}), nearMs: r.diedAtMs ?? r.recordedAt * 1000, what: r };
}

function deathSlots(c: ContainerLedger, expected: boolean): Slot[] {
  const isExpected = (exitCode?: number) => exitCode !== undefined && c.service.expectedExitCodes.includes(exitCode);
  return c.deaths
    .filter(
      (d) =>
        (d.cls === (expected ? 'expected' : 'crash') || MAY_CLASSES.includes(d.cls)) &&
        (!MAY_CLASSES.includes(d.cls) || isExpected(d.death.exitCode) === expected),
    )
    .map((d) => ({ ...timesOf(d.death, c.engine), must: !MAY_CLASSES.includes(d.cls), what: d }));
}

/**
 * The times a record of a death may carry: its die event's, give or take MATCH_TOLERANCE_MS. For a death in a
 * dockerd shutdown, anywhere in that restart: dockerd logs deaths late in its shutdown (run G: an OOM kill 0.75 s
 * before the shutdown, its die event 8.5 s after it, keeper's record at its FinishedAt), and a stop whose container
 * dockerd failed to start again as it came back is recorded at that failed start (run J: exit 255, "task already
 * exists", 9.7 s after the shutdown's stop). None for a death only RestartCount showed.
 */
function timesOf(death: TrueDeath, engine: EngineWindows): Pick<Slot, 'atMs' | 'fromMs' | 'untilMs'> {
  if (death.kind === 'unseen') return {};
  const restart = engine.restartOf(death.atMs);
  if (!restart) return { atMs: death.atMs };
  const endMs = restart.backAtMs ?? restart.toMs ?? death.atMs;
  return {
    atMs: death.atMs,
    fromMs: Math.min(death.atMs, restart.fromMs) - MATCH_TOLERANCE_MS,
    untilMs: Math.max(death.atMs, endMs) + MATCH_TOLERANCE_MS,
  };
}

function episodeSlots(c: ContainerLedger): Slot[] {
  // keeper records an episode when it looks: after it began, before keeper's restart (or the end) ended it.
  return c.episodes.map((e) => {
    const end = e.episode.endedBy?.atMs ?? e.episode.healedAtMs;
    return {
      atMs: e.episode.atMs,
      fromMs: e.episode.atMs - 1000,
      untilMs: end === undefined ? Infinity : end + MATCH_TOLERANCE_MS,
      must: e.must,
      what: e,
    };
  });
}

const KINDS = ['crashes', 'expected exits', 'health failures'] as const;
type Kind = (typeof KINDS)[number];

/** Each kind of record against what Docker recorded, paired one to one (matching.ts). */
export function matchContainer(
  c: ContainerLedger,
): Record<Kind, { slots: Slot[]; records: KeeperRecord[]; matched: Matched<unknown, KeeperRecord> }> {
  const kind = (slots: Slot[], records: KeeperRecord[]) => ({ slots, records, matched: matchRecords(slots, records.map(recorded)) });
  return {
    crashes: kind(deathSlots(c, false), c.counted),
    'expected exits': kind(deathSlots(c, true), c.expected),
    'health failures': kind(episodeSlots(c), c.health),
  };
}

export function balances(c: ContainerLedger): Balance[] {
  const all = matchContainer(c);
  return KINDS.map((what) => {
    const { slots, records, matched } = all[what];
    return {
      what,
      must: slots.filter((s) => s.must).length,
      may: slots.filter((s) => !s.must).length,
      keeper: records.length,
      missed: matched.missed.length,
      extra: matched.extra.length,
    };
  });
}

export const isBalanced = (b: Balance) => b.missed === 0 && b.extra === 0;

const iso = (msValue: number | null | undefined) =>
  msValue === null || msValue === undefined ? 'no time' : new Date(msValue).toISOString().slice(11, 23);

function episodeEnd(e: UnhealthyEpisode): string {
  if (e.endedBy) return `${e.endedBy.kind}${e.endedBy.restarted ? ' (keeper restart)' : ''} at ${iso(e.endedBy.atMs)}`;
  return e.healedAtMs === undefined ? 'nothing' : `healthy again at ${iso(e.healedAtMs)}`;
}

/** The container's deaths and records side by side, in time order, each missed or extra one marked, for the report. */
function timeline(c: ContainerLedger, b: Balance): string[] {
  const { slots, records, matched } = matchContainer(c)[b.what];
  const missed = new Set<unknown>(matched.missed);
  const extra = new Set<unknown>(matched.extra.map((r) => r.what));
  const mark = (set: Set<unknown>, x: unknown, word: string) => (set.has(x) ? ` **${word}**` : '');
  const rows: { atMs: number; line: string }[] = [];
  for (const slot of slots) {
    const what = slot.what as { death?: TrueDeath; cls?: DeathClass; episode?: UnhealthyEpisode; must: boolean };
    if (what.death) {
      const d = what.death;
      const at = d.kind === 'unseen' ? `by ${iso(d.atMs)} (unseen by the stream)` : iso(d.atMs);
      const line = `Docker: ${at} ${what.cls} exit ${d.exitCode ?? '?'} (RestartCount ${d.number ?? '-'}, run ${d.epoch})`;
      rows.push({ atMs: d.atMs, line: line + mark(missed, slot, 'missed') });
    } else if (what.episode) {
      const e = what.episode;
      const line = `Docker: ${iso(e.atMs)} unhealthy, ended by ${episodeEnd(e)} (${what.must ? 'must' : 'may'})`;
      rows.push({ atMs: e.atMs, line: line + mark(missed, slot, 'missed') });
    }
  }
  for (const r of records) {
    const line = `keeper: ${iso(r.diedAtMs)} record ${r.id}, seen by ${r.seenBy}, dated by ${r.datedBy ?? '-'}, exit ${r.exitCode ?? '?'}, recorded ${iso(r.recordedAt * 1000)}`;
    rows.push({ atMs: r.diedAtMs ?? r.recordedAt * 1000, line: line + mark(extra, r, 'extra') });
  }
  return rows.sort((a, b2) => a.atMs - b2.atMs).map((r) => r.line);
}

export function imbalancesOf(c: ContainerLedger): Imbalance[] {
  return balances(c)
    .filter((b) => !isBalanced(b))
    .map((b) => ({ serviceId: c.service.serviceId, containerId: c.service.containerId.slice(0, 12), balance: b, lines: timeline(c, b) }));
}

interface Delivery {
  key: string;
  kind: string;
  serviceId: string;
  opening: number;
  retryAt: number;
}

/** Each opening alerted (a circuit-opened delivery with its service and retry time), each under a key of its own. */
export function alertLedger(openings: Opening[], received: Received[]): AlertLedger {
  const deliveries = received.map((r) => JSON.parse(r.body) as Delivery).filter((d) => d.kind === 'circuit-opened');
  const openingsOfKey = new Map<string, Opening[]>();
  const problems: string[] = [];
  let alerted = 0;
  for (const o of openings) {
    const keys = new Set(deliveries.filter((d) => d.serviceId === o.serviceId && d.retryAt === o.retryAtSec).map((d) => d.key));
    if (keys.size === 0) problems.push(`${o.serviceId}: opening ${o.opening} at ${iso(o.openedAtSec * 1000)} was never alerted`);
    else alerted++;
    for (const k of keys) openingsOfKey.set(k, [...(openingsOfKey.get(k) ?? []), o]);
  }
  for (const [key, os] of openingsOfKey) {
    if (os.length > 1)
      problems.push(
        `key ${key} was delivered for ${os.length} openings: ${os.map((o) => `${o.serviceId} opening ${o.opening} at ${iso(o.openedAtSec * 1000)}`).join(', ')}`,
      );
  }
  const unmatched = deliveries.filter((d) => !openings.some((o) => o.serviceId === d.serviceId && o.retryAtSec === d.retryAt));
  for (const d of unmatched) problems.push(`alert ${d.key} (retry at ${d.retryAt}) matches no opening the run saw`);
  return { openings: openings.length, alerted, distinctKeys: openingsOfKey.size, problems };
}

/** keeper stops a container only while its circuit is open: from the opening until the poll saw it closed. */
export function keeperStopsOutsideCircuits(
  containers: ContainerLedger[],
  truths: Map<string, ContainerTruth>,
  openings: Opening[],
  engine: EngineWindows,
): string[] {
  const problems: string[] = [];
  for (const c of containers) {
    const own = openings.filter((o) => o.containerId === c.service.containerId);
    for (const stop of truths.get(c.service.containerId)?.stops ?? []) {
      if (stop.restarted || engine.inShutdown(stop.atMs)) continue;
      const inside = own.some((o) => stop.atMs >= o.openedAtSec * 1000 - 1000 && stop.atMs <= (o.closedSeenAtMs ?? Infinity));
      if (!inside)
        problems.push(
          `${c.service.serviceId}: keeper stopped ${c.service.containerId.slice(0, 12)} at ${iso(stop.atMs)} with its circuit closed`,
        );
    }
  }
  return problems;
}
