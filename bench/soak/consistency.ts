/**
 * No row half-written: what one transaction writes together must agree at the end of the run. recordCrash
 * (src/db/services.ts) writes the crash records, one `crashed` deployment row, the service's counters and window,
 * and at the threshold the circuit (open, escalation, retry time, keeper_circuit_openings and its opening number); closeCircuit writes the
 * closed circuit and one recovery deployment row. A torn write leaves one without the other, and one of these fails:
 *
 * - SQLite's own integrity_check;
 * - each second in which a service's deaths were counted (records with recorded_at = t) has its `crashed`
 *   deployment row (created_at = t, trigger reconciler), and no such row stands without counted records, nor more
 *   rows than records;
 * - the service's crash_count is the number of counted records of its current window (window_start =
 *   crash_window_start), 0 with no window; last_crashed_at is the newest counted record's second;
 * - an open circuit has a retry time, an escalation of at least 1 that keeper_circuit_openings names, with an opening number, and status
 *   `crashed`; a closed one has no retry time;
 * - each opening the run saw close has its own recovery row (auto_recovery or manual_reset).
 */
import type { StateDb } from '../../src/db/open';
import type { Opening } from './openings';

export interface ConsistencyResult {
  checks: { name: string; checked: number; problems: string[] }[];
}

interface ServiceState {
  id: string;
  crashCount: number;
  windowStart: number | null;
  lastCrashedAt: number | null;
  open: number;
  escalation: number;
  opening: number | null;
  retryAt: number | null;
  status: string;
  openingEscalation: number | null;
}

function services(db: StateDb): ServiceState[] {
  return db
    .prepare(
      `SELECT s.id, s.crash_count AS crashCount, s.crash_window_start AS windowStart, s.last_crashed_at AS lastCrashedAt,
              s.circuit_open AS open, s.circuit_open_count AS escalation, s.circuit_retry_at AS retryAt, s.status,
              o.generation AS openingEscalation, o.opening AS opening
         FROM services s LEFT JOIN keeper_circuit_openings o ON o.service_id = s.id ORDER BY s.id`,
    )
    .all() as ServiceState[];
}

/** Seconds in which a service had counted records, or `crashed` deployment rows, with how many of each. */
function countedSeconds(db: StateDb): { serviceId: string; at: number; records: number; rows: number }[] {
  return db
    .prepare(
      `SELECT serviceId, at, SUM(records) AS records, SUM(rows) AS rows FROM (
         SELECT service_id AS serviceId, recorded_at AS at, COUNT(*) AS records, 0 AS rows FROM keeper_crash_records
          WHERE expected = 0 GROUP BY service_id, recorded_at
         UNION ALL
         SELECT service_id, created_at, 0, COUNT(*) FROM deployments WHERE status = 'crashed' AND trigger = 'reconciler'
          GROUP BY service_id, created_at)
       GROUP BY serviceId, at ORDER BY serviceId, at`,
    )
    .all() as { serviceId: string; at: number; records: number; rows: number }[];
}

function recordsOfWindow(db: StateDb, serviceId: string, windowStart: number): number {
  return db
    .prepare('SELECT COUNT(*) FROM keeper_crash_records WHERE service_id = ? AND window_start = ? AND expected = 0')
    .pluck()
    .get(serviceId, windowStart) as number;
}

function newestRecordAt(db: StateDb, serviceId: string): number | null {
  return db.prepare('SELECT MAX(recorded_at) FROM keeper_crash_records WHERE service_id = ? AND expected = 0').pluck().get(serviceId) as
    number | null;
}

function recoveryRows(db: StateDb, serviceId: string): number {
  return db
    .prepare(`SELECT COUNT(*) FROM deployments WHERE service_id = ? AND trigger IN ('auto_recovery', 'manual_reset')`)
    .pluck()
    .get(serviceId) as number;
}

function counterProblems(db: StateDb, s: ServiceState): string[] {
  const problems: string[] = [];
  const inWindow = s.windowStart === null ? 0 : recordsOfWindow(db, s.id, s.windowStart);
  if (s.crashCount !== inWindow)
    problems.push(`${s.id}: crash_count ${s.crashCount}, but ${inWindow} counted records in its window (${s.windowStart ?? 'none'})`);
  const newest = newestRecordAt(db, s.id);
  if (newest !== null && s.lastCrashedAt !== newest)
    problems.push(`${s.id}: last_crashed_at ${s.lastCrashedAt}, but its newest counted record is of ${newest}`);
  return problems;
}

function circuitProblems(s: ServiceState): string[] {
  if (s.open === 0) return s.retryAt === null ? [] : [`${s.id}: closed circuit with circuit_retry_at ${s.retryAt}`];
  const problems: string[] = [];
  if (s.retryAt === null) problems.push(`${s.id}: open circuit without a retry time`);
  if (s.escalation < 1) problems.push(`${s.id}: open circuit at escalation ${s.escalation}`);
  if (s.openingEscalation !== s.escalation)
    problems.push(`${s.id}: open circuit at escalation ${s.escalation}, keeper_circuit_openings says ${s.openingEscalation ?? 'none'}`);
  if (!s.opening) problems.push(`${s.id}: open circuit without an opening number in keeper_circuit_openings`);
  if (s.status !== 'crashed') problems.push(`${s.id}: open circuit with status ${s.status}`);
  return problems;
}

export function checkConsistency(db: StateDb, openings: Opening[]): ConsistencyResult {
  const integrity = db.pragma('integrity_check', { simple: true }) as string;
  const rows = services(db);
  const seconds = countedSeconds(db);
  const closedByService = new Map<string, number>();
  for (const o of openings)
    if (o.closedSeenAtMs !== undefined) closedByService.set(o.serviceId, (closedByService.get(o.serviceId) ?? 0) + 1);
  return {
    checks: [
      { name: 'SQLite integrity_check', checked: 1, problems: integrity === 'ok' ? [] : [integrity] },
      {
        name: 'each counting second: its crash records and its `crashed` deployment row',
        checked: seconds.length,
        problems: seconds
          .filter((t) => t.records > 0 !== t.rows > 0 || t.rows > t.records)
          .map((t) => `${t.serviceId} at ${new Date(t.at * 1000).toISOString()}: ${t.records} counted records, ${t.rows} crashed rows`),
      },
      {
        name: "each service's crash_count and last_crashed_at against its records",
        checked: rows.length,
        problems: rows.flatMap((s) => counterProblems(db, s)),
      },
      { name: "each service's circuit fields", checked: rows.length, problems: rows.flatMap(circuitProblems) },
      {
        name: 'each closed opening: its recovery deployment row',
        checked: closedByService.size,
        problems: [...closedByService]
          .map(([id, closed]) => ({ id, closed, rows: recoveryRows(db, id) }))
          .filter((c) => c.rows !== c.closed)
          .map((c) => `${c.id}: ${c.closed} openings closed, ${c.rows} recovery rows`),
      },
    ],
  };
}
