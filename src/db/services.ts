/**
 * Service rows: crash accounting and the circuit breaker. Every write is a compare-and-set on what the
 * caller observed, in one transaction, so a retried activity or a racing ah API call never counts twice
 * or clobbers a newer state (W-19).
 *
 * Transactions that read before they write are IMMEDIATE: in WAL mode SQLite does not wait (busy_timeout) to
 * upgrade a deferred transaction's read to a write while another process writes, it fails at once with
 * SQLITE_BUSY (found by test/reliability/sqlite-lock.test.ts).
 */
import { crashDecision, type CircuitOpening, type CrashCounters, type CrashDecision } from '../policy/deaths/decision';
import type { CircuitRef, CrashPolicy, CrashRecord } from '../contracts/reconcile';
import type { ServiceRowFields } from '../policy/rows';
import { insertCrashRecords, type LogTail } from './crash-records';
import { recordDeployment, type DeploymentTrigger } from './deployments';
import { swapSnapshot } from './container-snapshots';
import { openingWhy } from '../policy/circuit-words';
import {
  IS_CURRENT_OPENING,
  lastOpenedAt,
  OPEN_CIRCUIT_REF,
  recordOpening,
  toCircuitRefs,
  trustedOpenCircuit,
  type CircuitRefRow,
} from './circuit-openings';
import type { StateDb } from './open';

/**
 * A service row as the reconciler reads it: the fields its rules check (policy/rows.ts), the tenant, and when a
 * crash was last counted on it (unix seconds as ah or keeper wrote them; a first snapshot counts only later deaths).
 */
export interface ServiceRow extends ServiceRowFields {
  tenantId: string;
  lastCrashedAt: unknown;
  crashWindowStart: unknown;
}

export function readServices(db: StateDb): ServiceRow[] {
  return db
    .prepare(
      `SELECT id, tenant_id AS tenantId, status, container_id AS containerId, crash_count AS crashCount,
                circuit_open AS circuitOpen, circuit_open_count AS circuitOpenCount, circuit_retry_at AS circuitRetryAt,
                last_crashed_at AS lastCrashedAt, crash_window_start AS crashWindowStart
              FROM services ORDER BY id`,
    )
    .all() as ServiceRow[];
}

export interface CrashOutcome {
  counted: number;
  crashCount: number;
  opened?: CircuitRef;
}

/**
 * Counts a crash once: the snapshot swap is the compare-and-set, and the service row must still be the watched
 * one (same container, circuit closed). What it writes is the decision of a death's story (crashDecision), taken
 * here with the row's own counters; at the threshold the circuit opens in the same transaction. Each death is
 * recorded (keeper_crash_records) in the same transaction too, with its log tail from `tails`.
 */
export function recordCrash(db: StateDb, c: CrashRecord, now: number, hostPolicy: CrashPolicy, tails: LogTail[] = []): CrashOutcome {
  return db
    .transaction((): CrashOutcome => {
      if (!swapSnapshot(db, c.serviceId, c.expectedLook, c.nextLook, now)) return { counted: 0, crashCount: 0 };
      const row = watchedRow(db, c);
      if (!row || c.deaths <= 0) return { counted: 0, crashCount: row?.crash_count ?? 0 };
      const counters = {
        crashCount: row.crash_count,
        windowStart: row.crash_window_start,
        escalation: row.circuit_open_count,
        lastOpenedAt: lastOpenedAt(db, c.serviceId),
      };
      const decision = crashDecision(counters, c, now, hostPolicy);
      if (decision.counted <= 0) return recordExpectedOnly(db, c, row, decision, tails, now);
      return recordCounted(db, c, row, decision, tails, now);
    })
    .immediate();
}

/** The counted deaths: the row's counters, ah's `crashed` deployment row, the records, and the circuit's opening. */
function recordCounted(db: StateDb, c: CrashRecord, row: WatchedRow, decision: CrashDecision, tails: LogTail[], now: number): CrashOutcome {
  const { counted, counters, windowStarts, opening, policy } = decision;
  updateCrashCounters(db, c, row, counters, opening, now);
  recordDeployment(db, {
    serviceId: c.serviceId,
    tenantId: row.tenant_id,
    image: row.image,
    status: 'crashed',
    trigger: 'reconciler',
    error: c.reason,
    at: now,
  });
  insertCrashRecords(db, { serviceId: c.serviceId, containerId: c.containerId, windowStarts, recordedAt: now }, decision.deaths, tails);
  if (!opening) return { counted, crashCount: counters.crashCount };
  const { escalation } = opening;
  const number = recordOpening(db, { serviceId: c.serviceId, escalation, retryAt: opening.retryAt }, now);
  return {
    counted,
    crashCount: counters.crashCount,
    opened: { serviceId: c.serviceId, opening: number, escalation, retryAt: opening.retryAt, why: openingWhy(counters.crashCount, policy) },
  };
}

interface WatchedRow {
  tenant_id: string;
  image: string | null;
  status: string;
  crash_count: number;
  crash_window_start: number | null;
  circuit_open_count: number;
}

/** The service row, if it is still the one watched: same container, circuit closed, running or crashed. */
function watchedRow(db: StateDb, c: CrashRecord): WatchedRow | undefined {
  return db
    .prepare(
      `SELECT tenant_id, image, status, crash_count, crash_window_start, circuit_open_count FROM services
              WHERE id = ? AND container_id = ? AND circuit_open = 0 AND status IN ('running', 'crashed')`,
    )
    .get(c.serviceId, c.containerId) as WatchedRow | undefined;
}

/** The counted crash on the service row: its counters and window, and the circuit when this crash opens it. */
function updateCrashCounters(
  db: StateDb,
  c: CrashRecord,
  row: WatchedRow,
  counters: CrashCounters,
  opening: CircuitOpening | undefined,
  now: number,
): void {
  db.prepare(
    `UPDATE services SET status = ?, crash_count = ?, crash_window_start = ?, last_crashed_at = ?, last_error = ?,
                updated_at = ?, circuit_open = ?, circuit_open_count = ?, circuit_retry_at = ?
              WHERE id = ? AND container_id = ? AND circuit_open = 0 AND status = ?`,
  ).run(
    opening ? 'crashed' : c.statusAfter,
    counters.crashCount,
    counters.windowStart,
    now,
    c.reason,
    now,
    opening ? 1 : 0,
    opening?.escalation ?? row.circuit_open_count,
    opening?.retryAt ?? null,
    c.serviceId,
    c.containerId,
    row.status,
  );
}

/**
 * Only expected exits: each is recorded (keeper crashes shows it), the status follows the container, and the
 * crash counters, the window and the circuit are left as they were.
 */
function recordExpectedOnly(
  db: StateDb,
  c: CrashRecord,
  row: { status: string; crash_count: number },
  { deaths, windowStarts }: CrashDecision,
  tails: LogTail[],
  now: number,
): CrashOutcome {
  db.prepare(
    `UPDATE services SET status = ?, last_error = ?, updated_at = ?
              WHERE id = ? AND container_id = ? AND circuit_open = 0 AND status = ?`,
  ).run(c.statusAfter, `${c.reason} (expected)`, now, c.serviceId, c.containerId, row.status);
  insertCrashRecords(db, { serviceId: c.serviceId, containerId: c.containerId, windowStarts, recordedAt: now }, deaths, tails);
  return { counted: 0, crashCount: row.crash_count };
}

export interface CircuitRow {
  serviceId: string;
  tenantId: string;
  status: string;
  containerId: string | null;
  open: boolean;
  /**
   * The opening's number (keeper_circuit_openings): the open circuit's, or a closed one's last. Null when keeper
   * has not numbered the open circuit yet (ah opened it: the next tick takes it over), or never saw it open.
   */
  opening: number | null;
  /** circuit_open_count: the escalation level, which picks the next backoff and decays. */
  escalation: number;
  retryAt: number | null;
  crashCount: number;
  /** crash_window_start: the window whose deaths opened the circuit (keeper_crash_records.window_start). */
  windowStart: number | null;
  /** When keeper opened that opening itself; null if it took it over, or has not numbered it (ah opened it). */
  openedAt: number | null;
  /** When keeper took that opening over (ah opened it, or it was open before openings were numbered). */
  takenOverAt: number | null;
}

/** A services row and its latest opening, if it is the row's (open on it, or closed since). */
const CIRCUIT_SELECT = `SELECT s.id AS serviceId, s.tenant_id AS tenantId, s.status, s.container_id AS containerId,
    s.circuit_open AS open, s.circuit_open_count AS escalation, s.circuit_retry_at AS retryAt, s.crash_count AS crashCount,
    s.crash_window_start AS windowStart, o.opening, o.opened_at AS openedAt, o.taken_over_at AS takenOverAt,
    (s.circuit_open = 0 OR (${IS_CURRENT_OPENING('s', 'o')})) AS numbered
  FROM services s LEFT JOIN keeper_circuit_openings o ON o.service_id = s.id`;

type CircuitSelected = Omit<CircuitRow, 'open'> & { open: number; numbered: number | null };

function toCircuit({ numbered, ...r }: CircuitSelected): CircuitRow {
  // An open row that is not the recorded opening is one keeper has not numbered: nothing recorded is of it.
  const ours = numbered === 1;
  return {
    ...r,
    open: r.open === 1,
    opening: ours && r.opening !== null && r.opening > 0 ? r.opening : null, // 0: an older build's row, not numbered
    openedAt: ours && r.takenOverAt === null ? r.openedAt : null,
    takenOverAt: ours ? r.takenOverAt : null,
  };
}

export function readCircuit(db: StateDb, serviceId: string): CircuitRow | undefined {
  const r = db.prepare(`${CIRCUIT_SELECT} WHERE s.id = ?`).get(serviceId) as CircuitSelected | undefined;
  return r && toCircuit(r);
}

/** How many services' circuits are open now (the keeper_circuits_open gauge). */
export function countOpenCircuits(db: StateDb): number {
  return db.prepare('SELECT COUNT(*) FROM services WHERE circuit_open = 1').pluck().get() as number;
}

/** Open circuits, and closed ones still escalated (circuit_open_count > 0). */
export function listCircuits(db: StateDb): CircuitRow[] {
  return (
    db
      .prepare(`${CIRCUIT_SELECT} WHERE s.circuit_open = 1 OR s.circuit_open_count > 0 ORDER BY s.circuit_open DESC, s.id`)
      .all() as CircuitSelected[]
  ).map(toCircuit);
}

/**
 * Open circuits whose retry time has passed (at `now`), e.g. opened by ah before keeper took over, on rows the tick
 * can trust, with their opening's number when keeper has numbered it.
 */
export function expiredCircuits(db: StateDb, now: number): CircuitRef[] {
  const rows = db
    .prepare(`${OPEN_CIRCUIT_REF} WHERE ${trustedOpenCircuit('s')} AND s.circuit_retry_at <= ? ORDER BY s.id`)
    .all(now) as CircuitRefRow[];
  return toCircuitRefs(rows);
}

export interface Recovery {
  serviceId: string;
  /**
   * The opening to close. Absent only from a run that began before openings were numbered: it closes the open
   * circuit if that has its `escalation` and `retryAt` (the one it began holding), or, when it sends no retry time
   * either (an attempt scheduled before the upgrade), the opening its hold names.
   */
  opening?: number;
  escalation: number;
  retryAt?: number;
  trigger: Extract<DeploymentTrigger, 'auto_recovery' | 'manual_reset'>;
  status: 'running' | 'stopped';
  error?: string;
}

/** The condition on the services row (`services`) under which a recovery may close it: its opening is still open. */
function closable(r: Omit<Recovery, 'trigger' | 'status'>): { where: string; args: unknown[] } {
  const current = `EXISTS (SELECT 1 FROM keeper_circuit_openings o WHERE ${IS_CURRENT_OPENING('services', 'o')}`;
  if (r.opening !== undefined) return { where: `${current} AND o.opening = ?)`, args: [r.opening] };
  if (r.retryAt !== undefined) return { where: 'circuit_open_count = ? AND circuit_retry_at = ?', args: [r.escalation, r.retryAt] };
  return {
    where: `circuit_open_count = ? AND ${current}
              AND o.opening = (SELECT h.opening FROM keeper_circuit_holds h WHERE h.service_id = o.service_id))`,
    args: [r.escalation],
  };
}

/** Whether the service's circuit is open on the opening `r` names (see Recovery): read only. */
export function isOpenOn(db: StateDb, r: Omit<Recovery, 'trigger' | 'status'>): boolean {
  const { where, args } = closable(r);
  return db.prepare(`SELECT 1 FROM services WHERE id = ? AND circuit_open = 1 AND ${where}`).get(r.serviceId, ...args) !== undefined;
}

/**
 * Closes the circuit's opening `r.opening` and resets the crash window. A compare-and-set on that opening being the
 * open one: of any number of attempts exactly one wins, and a run of an older opening never closes a newer one.
 */
export function closeCircuit(db: StateDb, r: Recovery, now: number): boolean {
  return db
    .transaction(() => {
      const row = db.prepare('SELECT tenant_id, image FROM services WHERE id = ?').get(r.serviceId) as
        { tenant_id: string; image: string | null } | undefined;
      const { where, args } = closable(r);
      const changed = db
        .prepare(
          `UPDATE services SET circuit_open = 0, crash_count = 0, crash_window_start = NULL, circuit_retry_at = NULL,
                  status = ?, last_error = ?, updated_at = ?
                WHERE id = ? AND circuit_open = 1 AND ${where}`,
        )
        .run(r.status, r.error ?? '', now, r.serviceId, ...args).changes;
      if (changed !== 1 || !row) return false;
      recordDeployment(db, {
        serviceId: r.serviceId,
        tenantId: row.tenant_id,
        image: row.image,
        status: r.status,
        trigger: r.trigger,
        error: r.error,
        at: now,
      });
      return true;
    })
    .immediate();
}

/** Each condition once: the tick's write and the worker's look (which only reads) share it. */
const DECAY_DUE = `circuit_open = 0 AND circuit_open_count > 0
              AND id IN (SELECT service_id FROM keeper_circuit_openings WHERE opened_at <= ?)`;
const DEPLOY_STALE = `status = 'deploying' AND updated_at < ?`;

/** Escalation decays: closed circuits keeper last opened at least decaySec ago go back to open count 0. */
export function decayEscalations(db: StateDb, now: number, decaySec: number): number {
  return db.prepare(`UPDATE services SET circuit_open_count = 0 WHERE ${DECAY_DUE}`).run(now - decaySec).changes;
}

/** The services a tick would fail as stale deploys, or decay the escalation of, now: ids, read only. */
export function servicesDue(
  db: StateDb,
  now: number,
  p: { staleDeployAfterSec: number; decaySec: number },
): { deploys: string[]; decays: string[] } {
  const ids = (where: string, at: number) => db.prepare(`SELECT id FROM services WHERE ${where} ORDER BY id`).pluck().all(at) as string[];
  return { deploys: ids(DEPLOY_STALE, now - p.staleDeployAfterSec), decays: ids(DECAY_DUE, now - p.decaySec) };
}

/** A crashed service whose container has run again long enough goes back to `running`. */
export function markServiceRunning(db: StateDb, serviceId: string, containerId: string, now: number): boolean {
  return (
    db
      .prepare(
        `UPDATE services SET status = 'running', updated_at = ?
              WHERE id = ? AND container_id = ? AND status = 'crashed' AND circuit_open = 0`,
      )
      .run(now, serviceId, containerId).changes === 1
  );
}

/** A crashed service whose container is gone (404) becomes `stopped`: nothing will bring it back. */
export function markServiceStopped(db: StateDb, serviceId: string, containerId: string, now: number, reason: string): boolean {
  return (
    db
      .prepare(
        `UPDATE services SET status = 'stopped', last_error = ?, updated_at = ?
              WHERE id = ? AND container_id = ? AND status = 'crashed' AND circuit_open = 0`,
      )
      .run(reason, now, serviceId, containerId).changes === 1
  );
}

/**
 * An in-flight service (created, restarting) whose container is gone (404) becomes `stopped`, by a
 * compare-and-set on the status and container observed, so a deploy that moved on since is left alone.
 */
export function stopVanishedService(
  db: StateDb,
  v: { serviceId: string; containerId: string; fromStatus: string; reason: string },
  now: number,
): boolean {
  return (
    db
      .prepare(
        `UPDATE services SET status = 'stopped', last_error = ?, updated_at = ?
              WHERE id = ? AND container_id = ? AND status = ? AND circuit_open = 0`,
      )
      .run(v.reason, now, v.serviceId, v.containerId, v.fromStatus).changes === 1
  );
}

export const STALE_DEPLOY_ERROR = 'deploy timed out (reconciler)';

/** `deploying` for longer than afterSec becomes `failed`, each with its deployment row, in one transaction. */
export function failStaleDeploys(db: StateDb, now: number, afterSec: number): number {
  return db
    .transaction(() => {
      const cutoff = now - afterSec;
      const rows = db.prepare(`SELECT id, tenant_id, image FROM services WHERE ${DEPLOY_STALE}`).all(cutoff) as {
        id: string;
        tenant_id: string;
        image: string | null;
      }[];
      const update = db.prepare(`UPDATE services SET status = 'failed', last_error = ?, updated_at = ? WHERE id = ? AND ${DEPLOY_STALE}`);
      let n = 0;
      for (const r of rows) {
        if (update.run(STALE_DEPLOY_ERROR, now, r.id, cutoff).changes !== 1) continue;
        recordDeployment(db, {
          serviceId: r.id,
          tenantId: r.tenant_id,
          image: r.image,
          status: 'failed',
          trigger: 'reconciler',
          error: STALE_DEPLOY_ERROR,
          at: now,
        });
        n++;
      }
      return n;
    })
    .immediate();
}
