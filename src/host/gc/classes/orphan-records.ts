/**
 * keeper's records of what is gone, which would otherwise keep a row for everything ever seen: the circuit hold
 * and the opening of a service whose row ah deleted, and a reported problem whose subject is gone (a `service:`,
 * `database:` or `environment:` whose row is deleted, a `container:` the engine no longer has, or that the
 * containers class of this sweep removes). A problem is only logged when its row is new, so one whose subject is
 * still there is never pruned, and neither is one reported after the engine was listed (its container may be newer
 * than the list): a present problem is still reported once. Every removal is a compare-and-set on what the sweep saw.
 *
 * A service's opening row goes with the highest number it reached into keeper_circuit_opening_floor: if ah ever
 * reuses the id, its openings are numbered above every number the old service had, so no alert key repeats. The
 * engine not answering skips the container problems only; the rest is DB only, so the look does not ask for a sweep
 * for this class: the schedule's sweeps trim the tables.
 */
import { deleteHoldOfGoneService, holdsOfGoneServices } from '../../../db/circuit-holds';
import { deleteOpeningOfGoneService, openingsOfGoneServices } from '../../../db/circuit-openings';
import {
  deleteReportedProblem,
  problemReported,
  reportedProblems,
  subjectRowIds,
  SUBJECT_TABLES,
  type ReportedProblem,
  type RowSubject,
} from '../../../db/hosted';
import type { StateDb } from '../../../db/open';
import { oneLine } from '../../../text';
import { readCircuit } from '../../../db/services';
import { planEach, type Plan, type Verdict } from '../../../policy/gc';
import { unixSeconds } from '../../../time';
import { EngineView } from '../../../watch/engine-view';
import { gcClass, staying, type Observed } from '../class';

export type OrphanRecord =
  { kind: 'hold' | 'opening'; serviceId: string; opening: number; sinceSec: number } | { kind: 'problem'; problem: ReportedProblem };

export interface OrphanRecordsSeen extends Observed {
  holds: { serviceId: string; opening: number; heldAt: number }[];
  openings: { serviceId: string; opening: number; since: number | null }[];
  problems: ReportedProblem[];
  rows: Record<RowSubject, Set<string>>;
  /** The engine's containers that stay (this sweep's containers class removes the others), or undefined if it did not answer. */
  containerIds: string[] | undefined;
  /** Unix seconds just before the engine was listed: a problem first seen since may be of a container newer than the list. */
  listedAtSec: number;
}

/** A problem's subject as a row (service, database, environment), a container, or something else (never pruned). */
function subjectOf(p: ReportedProblem): { kind: RowSubject | 'container' | 'other'; id: string } {
  const at = p.subject.indexOf(':');
  const kind = p.subject.slice(0, at);
  const id = p.subject.slice(at + 1);
  if (at > 0 && (kind === 'container' || kind in SUBJECT_TABLES)) return { kind: kind as RowSubject | 'container', id };
  return { kind: 'other', id: p.subject };
}

/** Pure: whether a reported problem's subject is gone. */
export function judgeProblem(p: ReportedProblem, seen: Pick<OrphanRecordsSeen, 'rows' | 'containerIds' | 'listedAtSec'>): Verdict {
  const s = subjectOf(p);
  if (s.kind === 'other') return { remove: false, keep: 'foreign' };
  if (s.kind !== 'container')
    return seen.rows[s.kind].has(s.id) ? { remove: false, keep: 'present' } : { remove: true, reason: `${s.kind} ${s.id} is gone` };
  if (seen.containerIds === undefined) return { remove: false, keep: 'present' }; // skipped: the engine did not answer
  if (s.id.length > 0 && seen.containerIds.some((c) => c.startsWith(s.id))) return { remove: false, keep: 'present' };
  if (p.firstSeen >= seen.listedAtSec) return { remove: false, keep: 'young' };
  return { remove: true, reason: `container ${s.id} is gone from the engine` };
}

/** Pure: which records go. Holds and openings are observed only for services that are gone. */
export function planOrphanRecords(seen: OrphanRecordsSeen, now: number): Plan<OrphanRecord> {
  const gone = (serviceId: string) => `service ${serviceId} is gone`;
  const records: OrphanRecord[] = [
    ...seen.holds.map((h) => ({ kind: 'hold' as const, serviceId: h.serviceId, opening: h.opening, sinceSec: h.heldAt })),
    ...seen.openings.map((o) => ({ kind: 'opening' as const, serviceId: o.serviceId, opening: o.opening, sinceSec: o.since ?? now })),
    ...seen.problems.map((problem) => ({ kind: 'problem' as const, problem })),
  ];
  return planEach(
    records,
    (r) => (r.kind === 'problem' ? judgeProblem(r.problem, seen) : { remove: true, reason: gone(r.serviceId) }),
    (r, reason) =>
      r.kind === 'problem'
        ? { name: `problem ${r.problem.subject}: ${r.problem.problem}`, ageSeconds: Math.max(0, now - r.problem.firstSeen), reason }
        : { name: `circuit ${r.kind} of ${r.serviceId} (opening ${r.opening})`, ageSeconds: Math.max(0, now - r.sinceSec), reason },
  );
}

export const orphanRecords = gcClass({
  name: 'orphanRecords',
  words: 'circuit and problem records of what is gone',
  lookRequests: false,
  observe: async (deps, input): Promise<OrphanRecordsSeen> => {
    // A list of its own, made after this moment: a shared view may have been listed before it.
    const listedAtSec = unixSeconds(deps.clock);
    const listed = await new EngineView(deps.docker).containers().then(
      (all) => ({ ids: staying(all, input).map((c) => c.id) }),
      (err: unknown) => ({ error: oneLine(err) }),
    );
    const all = reportedProblems(deps.db);
    const aboutContainers = (p: ReportedProblem) => subjectOf(p).kind === 'container';
    return {
      holds: holdsOfGoneServices(deps.db),
      openings: openingsOfGoneServices(deps.db),
      // The engine not answering: the container problems are skipped this sweep, the rest judged.
      problems: 'error' in listed ? all.filter((p) => !aboutContainers(p)) : all,
      rows: subjectRowIds(deps.db),
      containerIds: 'ids' in listed ? listed.ids : undefined,
      listedAtSec,
      skipped: 'error' in listed ? all.filter(aboutContainers).map((p) => ({ name: `problem ${p.subject}`, error: listed.error })) : [],
    };
  },
  plan: (seen, { clock }) => planOrphanRecords(seen, unixSeconds(clock)),
  remove: (r, { db }) => {
    if (r.kind === 'problem') return removeProblem(db, r.problem);
    const deleted = r.kind === 'hold' ? deleteHoldOfGoneService(db, r.serviceId) : deleteOpeningOfGoneService(db, r.serviceId);
    if (!deleted && readCircuit(db, r.serviceId)) throw new Error(`service ${r.serviceId} is back: its circuit ${r.kind} is kept`);
  },
});

/** Deletes the problem as seen; one reported again since, or whose row is back, is kept (and the removal fails). */
function removeProblem(db: StateDb, p: ReportedProblem): void {
  const s = subjectOf(p);
  const row = s.kind === 'container' || s.kind === 'other' ? undefined : { kind: s.kind, id: s.id };
  if (!deleteReportedProblem(db, p, row) && problemReported(db, p.subject, p.problem))
    throw new Error(`the problem of ${p.subject} was reported again, or its subject is back: kept`);
}
