/**
 * `keeper uninstall`'s work, below the CLI: removes this host id's schedules, stops its loop runs, and deals with
 * what is in flight (open circuits, pending alerts) as the operator chooses (src/policy/uninstall.ts); with
 * --purge-state it also drops keeper's keeper_* tables, never ah's. It refuses while a worker polls the host's
 * queue (the worker would recreate the schedules) and, with something in flight and no choice, touches nothing and
 * says what is in flight. A second run finds nothing to remove. It prints nothing: the command words the outcome.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { openCircuits, purgeRefusal, removeState, workerStoppedCleanly, type StateRemoved } from '../host/uninstall';
import { ids, taskQueueFor } from '../ids';
import { inFlight, missingChoice, type AlertChoice, type CircuitChoice, type InFlight, type OpenCircuit } from '../policy/uninstall';
import type { Settings } from '../settings';
import { HOST_WORKFLOW_TYPES as TYPES, loopFootprint } from '../loops/schedules';
import { deleteSchedule, lastPollAgoMs, LIVE_POLL_WITHIN_MS, terminateWorkflow } from '../temporal/footprint';
import { resetCircuit } from '../temporal/operations';
import { hostTemporal } from './host-temporal';
import { Keeper } from './keeper';
import { openHostDbAsIs } from './open';
import { withOperatorClient } from './operator-client';

export interface UninstallChoices {
  circuits?: CircuitChoice;
  alerts?: AlertChoice;
  purgeState?: boolean;
}

export interface UninstallReport {
  hostId: string;
  inFlight: InFlight;
  schedulesDeleted: string[];
  loopRunsStopped: string[];
  circuits: { closed: { serviceId: string; status: string }[]; handedOver: string[]; left: string[]; rowsOnly: OpenCircuit[] };
  alerts: { dropped: string[]; left: string[] };
  state: StateRemoved | null;
  nothingToRemove: boolean;
}

/** Refused: what is in flight needs a choice (the message names it), or the purge is refused. Nothing was touched. */
export class UninstallRefused extends Error {
  override name = 'UninstallRefused';
  constructor(
    message: string,
    readonly hostId: string,
    readonly inFlight?: InFlight,
  ) {
    super(message);
  }
}

/** Uninstalls host `given.hostId` from its Temporal and, with --purge-state, keeper's state from its DB. */
export async function uninstallHost(given: Settings, opts: UninstallChoices): Promise<UninstallReport> {
  const db = fs.existsSync(path.resolve(given.db)) ? openHostDbAsIs(given) : undefined;
  try {
    const refusal = opts.purgeState && db ? purgeRefusal(db, given.hostId) : undefined;
    if (refusal) throw new UninstallRefused(refusal, given.hostId);
    const temporal = await hostTemporal(given);
    const settings = temporal.settings;
    const report = await withOperatorClient(settings, (client) =>
      uninstallOnTemporal(client, settings, db ? openCircuits(db) : [], opts, !!db && workerStoppedCleanly(db, settings.hostId)),
    ).finally(() => temporal.stop());
    report.state = db ? removeState(db, settings.hostId, !!opts.purgeState) : null;
    report.nothingToRemove = isNothing(report);
    return report;
  } finally {
    db?.close();
  }
}

/**
 * A worker that polled within a long poll's time is taken for alive, unless it recorded its own clean stop (its
 * event watcher's `stopped`): the server keeps listing a stopped worker's pollers for minutes.
 */
async function refuseLiveWorker(client: Client, host: string, workerStopped: boolean): Promise<void> {
  const agoMs = await lastPollAgoMs(client, taskQueueFor(host));
  if (agoMs === undefined || agoMs > LIVE_POLL_WITHIN_MS || workerStopped) return;
  throw new Error(
    `a worker polls ${taskQueueFor(host)} (last poll ${Math.round(agoMs / 1000)} s ago): stop it first ` +
      '(it recreates the schedules uninstall removes); a worker killed without a clean stop is forgotten a minute after its last poll',
  );
}

async function uninstallOnTemporal(
  client: Client,
  settings: Settings,
  circuitRows: OpenCircuit[],
  opts: UninstallChoices,
  workerStopped: boolean,
): Promise<UninstallReport> {
  const host = settings.hostId;
  await refuseLiveWorker(client, host, workerStopped);
  const footprint = await loopFootprint(client, host);
  const flight = inFlight(footprint.running, circuitRows, (sid) => ids.circuit(host, sid), TYPES);
  const refusal = missingChoice(flight, opts);
  if (refusal) throw new UninstallRefused(refusal, host, flight);
  const report = emptyReport(host, flight);
  for (const s of footprint.schedules) {
    await deleteSchedule(client, s.scheduleId);
    report.schedulesDeleted.push(s.scheduleId);
  }
  for (const id of flight.loopRuns) if (await terminateWorkflow(client, id, 'keeper uninstall')) report.loopRunsStopped.push(id);
  await settleCircuits(client, settings, flight, opts.circuits, report);
  const alerts = (await loopFootprint(client, host)).running.filter((w) => w.type === TYPES.alert).map((w) => w.workflowId);
  for (const id of alerts) {
    if (opts.alerts === 'drop' && (await terminateWorkflow(client, id, 'keeper uninstall --alerts drop'))) report.alerts.dropped.push(id);
    else if (opts.alerts !== 'drop') report.alerts.left.push(id);
  }
  return report;
}

function emptyReport(hostId: string, flight: InFlight): UninstallReport {
  return {
    hostId,
    inFlight: flight,
    schedulesDeleted: [],
    loopRunsStopped: [],
    circuits: { closed: [], handedOver: [], left: [], rowsOnly: [] },
    alerts: { dropped: [], left: [] },
    state: null,
    nothingToRemove: false,
  };
}

const circuitPrefix = (host: string) => ids.circuit(host, '');

/** close: a reset through a worker (this host's is stopped, so the command's own); hand-over: terminate; leave. */
async function settleCircuits(
  client: Client,
  settings: Settings,
  f: InFlight,
  choice: CircuitChoice | undefined,
  report: UninstallReport,
): Promise<void> {
  const running = [...f.circuits.flatMap((c) => (c.workflowId ? [c.workflowId] : [])), ...f.strayCircuitWorkflows];
  if (choice === 'close') {
    const serviceIds = [
      ...f.circuits.map((c) => c.serviceId),
      ...f.strayCircuitWorkflows.map((id) => id.slice(circuitPrefix(settings.hostId).length)),
    ];
    if (serviceIds.length > 0) report.circuits.closed = await resetCircuits(settings, serviceIds);
    return;
  }
  report.circuits.rowsOnly = f.circuits.filter((c) => !c.workflowId);
  if (choice === 'leave') report.circuits.left = running;
  if (choice !== 'hand-over') return;
  const reason = 'keeper uninstall --circuits hand-over: the state DB row keeps circuit_retry_at for whatever runs next';
  for (const id of running) if (await terminateWorkflow(client, id, reason)) report.circuits.handedOver.push(id);
}

async function resetCircuits(settings: Settings, serviceIds: string[]): Promise<{ serviceId: string; status: string }[]> {
  const run = await Keeper.with(settings, 'command', (k) =>
    k.runOnHost(async (c) => {
      const out: { serviceId: string; status: string }[] = [];
      for (const serviceId of serviceIds) {
        const s = await resetCircuit(c, settings.hostId, serviceId, 'keeper uninstall --circuits close');
        out.push({ serviceId, status: s.closedBy === 'reset' ? `closed, service ${s.status}` : 'was no longer open' });
      }
      return out;
    }),
  );
  return run.result;
}

function isNothing(r: UninstallReport): boolean {
  const touched =
    r.schedulesDeleted.length +
    r.loopRunsStopped.length +
    r.circuits.closed.length +
    r.circuits.handedOver.length +
    r.alerts.dropped.length;
  return (
    touched === 0 &&
    !r.state?.hostForgotten &&
    (r.state?.tablesDropped.length ?? 0) === 0 &&
    r.circuits.left.length + r.alerts.left.length === 0
  );
}
