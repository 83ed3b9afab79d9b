/**
 * One measured window of bench:cost: the server's action counter and DB size before and after, then every run the
 * host started in the window (listed by KeeperHost and StartTime), each one's history size and events, and the
 * part of each schedule's own workflow that fell in the window.
 */
import fs from 'node:fs';
import type { temporal } from '@temporalio/proto';
import { ids } from '../src/ids';
import { LOOPS, SCHEDULED_LOOPS, type Loop, type LoopName } from '../src/loops/registry';
import type * as workflows from '../src/workflows';
import { actionsOf, add, difference, eventTimeMs, scrapeActions, weighEvents, type Counts, type EventWeight } from './cost-history';
import type { CostHost } from './cost-host';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

type WorkflowType = keyof typeof workflows;
/** The host's workflows that are no loop's runs, each a row of its own. */
const OTHER_WORKFLOWS = { circuit: 'circuitBreaker', notify: 'notifyOperators' } as const satisfies Record<string, WorkflowType>;

/**
 * A row per loop, then per other run of a loop (the event runs, by what starts them: `events`), then the circuits,
 * the alerts, and the rest; the loops' registry (src/loops/registry.ts) gives the loops' rows and their workflow types.
 */
export type LoopRow = string;
const otherRunsOf = (l: Loop): [string, string][] => Object.entries(l.otherRuns ?? {});
export const LOOP_ROWS: readonly LoopRow[] = [
  ...LOOPS.flatMap((l) => [l.name, ...otherRunsOf(l).map(([by]) => by)]),
  ...Object.keys(OTHER_WORKFLOWS),
  'other',
];

const LOOP_OF_TYPE = new Map<string, LoopRow>([
  ...LOOPS.flatMap((l) => [
    ...(l.schedule ? [[l.schedule.workflowType, l.name] as [string, LoopRow]] : []),
    ...otherRunsOf(l).map(([by, type]) => [type, by] as [string, LoopRow]),
  ]),
  ...Object.entries(OTHER_WORKFLOWS).map(([row, type]) => [type, row] as [string, LoopRow]),
]);

export interface LoopFigures {
  runs: number;
  /** Actions of the loop's own runs. */
  actions: Counts;
  /** Actions of the loop's schedule workflow (temporal-sys-scheduler:…) in the window. */
  scheduleActions: Counts;
  runBytes: number[];
  runEvents: number[];
  scheduleBytes: number;
  events: Map<string, EventWeight>;
  /** The schedule workflow's events in the window. */
  scheduleEvents: Map<string, EventWeight>;
}

export interface CaseFigures {
  kind: string;
  hostId: string;
  windowMs: number;
  /** The server's action counter, window difference, by action type. */
  metric: Counts;
  loops: Map<LoopRow, LoopFigures>;
  dbGrowthBytes: number;
  notes: string[];
  /** Loops measured at another interval than their default: default-interval figures are the window's × this. */
  scale?: Partial<Record<LoopRow, number>>;
}

interface Snapshot {
  atMs: number;
  actions: Counts;
  dbBytes: number;
  schedules: Map<LoopName, { runId: string; size: number } | undefined>;
}

const sizeOf = (file: string) => (fs.existsSync(file) ? fs.statSync(file).size : 0);
const schedulerId = (h: CostHost, loop: LoopName) => `temporal-sys-scheduler:${ids.schedule(h.settings.hostId, loop)}`;

async function snapshot(h: CostHost): Promise<Snapshot> {
  const atMs = Date.now();
  const actions = await scrapeActions(h.metricsUrl);
  const dbBytes = sizeOf(h.temporalDbFile) + sizeOf(`${h.temporalDbFile}-wal`);
  const schedules = new Map<LoopName, { runId: string; size: number } | undefined>();
  for (const { name: loop } of SCHEDULED_LOOPS) {
    const d = await h.client.workflow
      .getHandle(schedulerId(h, loop))
      .describe()
      .catch(() => undefined);
    schedules.set(loop, d && { runId: d.runId, size: d.historySize ?? 0 });
  }
  return { atMs, actions, dbBytes, schedules };
}

function emptyLoop(): LoopFigures {
  return {
    runs: 0,
    actions: new Map(),
    scheduleActions: new Map(),
    runBytes: [],
    runEvents: [],
    scheduleBytes: 0,
    events: new Map(),
    scheduleEvents: new Map(),
  };
}

export async function measureWindow(h: CostHost, kind: string, o: { windowMs: number }, atOpen: () => Promise<void>): Promise<CaseFigures> {
  const before = await snapshot(h);
  await atOpen();
  await new Promise((r) => setTimeout(r, o.windowMs));
  const after = await snapshot(h);
  const loops = new Map<LoopRow, LoopFigures>(LOOP_ROWS.map((l) => [l, emptyLoop()]));
  const notes: string[] = [];
  await readRuns(h, before.atMs, after.atMs, loops, notes);
  await readSchedules(h, before, after, loops, notes);
  return {
    kind,
    hostId: h.settings.hostId,
    windowMs: after.atMs - before.atMs,
    metric: difference(after.actions, before.actions),
    loops,
    dbGrowthBytes: after.dbBytes - before.dbBytes,
    notes,
  };
}

/** Waits (bounded) for a run to close, so its history is whole; a circuit holds its timer for 30 min: read as is. */
async function settledDescription(h: CostHost, workflowId: string, runId: string, type: string) {
  const handle = h.client.workflow.getHandle(workflowId, runId);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const d = await handle.describe();
    if (d.closeTime || type === OTHER_WORKFLOWS.circuit || Date.now() > deadline)
      return { d, events: (await handle.fetchHistory()).events ?? [] };
    await new Promise((r) => setTimeout(r, 1000));
  }
}

async function readRuns(h: CostHost, fromMs: number, toMs: number, loops: Map<LoopRow, LoopFigures>, notes: string[]): Promise<void> {
  const query = `KeeperHost="${h.settings.hostId}" AND StartTime >= "${new Date(fromMs).toISOString()}" AND StartTime < "${new Date(toMs).toISOString()}"`;
  for await (const wf of h.client.workflow.list({ query })) {
    const { d, events } = await settledDescription(h, wf.workflowId, wf.runId, wf.type);
    if (!d.closeTime && wf.type !== OTHER_WORKFLOWS.circuit)
      notes.push(`${wf.type} ${wf.workflowId} still open after 60 s: its history so far is counted`);
    const loop = loops.get(LOOP_OF_TYPE.get(wf.type) ?? 'other')!;
    loop.runs += 1;
    loop.runBytes.push(d.historySize ?? 0);
    loop.runEvents.push(d.historyLength);
    for (const [k, v] of actionsOf(events as HistoryEvent[])) add(loop.actions, k, v);
    weighEvents(events as HistoryEvent[], loop.events);
  }
}

/** Each schedule's own workflow: its actions in the window and its history's growth (across a continue-as-new). */
async function readSchedules(
  h: CostHost,
  before: Snapshot,
  after: Snapshot,
  loops: Map<LoopRow, LoopFigures>,
  notes: string[],
): Promise<void> {
  for (const { name: loop } of SCHEDULED_LOOPS) {
    const b = before.schedules.get(loop);
    const a = after.schedules.get(loop);
    if (!a || !b) {
      notes.push(
        `the ${loop} schedule's workflow (${schedulerId(h, loop)}) could not be described: its actions are in "not in a run's history"`,
      );
      continue;
    }
    const figures = loops.get(loop)!;
    const runs = a.runId === b.runId ? [a.runId] : [b.runId, a.runId];
    let growth = a.size - b.size;
    if (a.runId !== b.runId) {
      const old = await h.client.workflow.getHandle(schedulerId(h, loop), b.runId).describe();
      growth = (old.historySize ?? 0) - b.size + a.size;
    }
    figures.scheduleBytes += growth;
    for (const runId of runs) {
      const events = ((await h.client.workflow.getHandle(schedulerId(h, loop), runId).fetchHistory()).events ?? []) as HistoryEvent[];
      for (const [k, v] of actionsOf(events, before.atMs, after.atMs))
        add(figures.scheduleActions, k === 'SignalWorkflowExecution' ? 'PatchSchedule' : k, v);
      weighEvents(
        events.filter((e) => eventTimeMs(e) >= before.atMs && eventTimeMs(e) < after.atMs),
        figures.scheduleEvents,
      );
    }
  }
}
