/**
 * `keeper uninstall [--circuits close|hand-over|leave] [--alerts drop|leave] [--purge-state] [--host-id ID]`:
 * removes this host id's schedules, stops its loop runs, and deals with what is in flight (open circuits, pending
 * alerts) as the operator chooses (src/policy/uninstall.ts); with --purge-state it also drops keeper's keeper_*
 * tables, never ah's. It refuses while a worker polls the host's queue (the worker would recreate the schedules)
 * and, with something in flight and no choice, touches nothing. A second run finds nothing to remove.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Option, type Command } from 'commander';
import type { Client } from '@temporalio/client';
import { openHostDbAsIs } from '../app/open';
import { openCircuits, purgeRefusal, removeState, workerStoppedCleanly, type StateRemoved } from '../host/uninstall';
import { ids, LOOP_LIST, loopRunTypes, taskQueueFor } from '../ids';
import {
  ALERT_CHOICES,
  CIRCUIT_CHOICES,
  inFlight,
  missingChoice,
  type AlertChoice,
  type CircuitChoice,
  type HostWorkflowTypes,
  type InFlight,
  type OpenCircuit,
} from '../policy/uninstall';
import type { Settings } from '../settings';
import { hostTemporal } from '../app/host-temporal';
import { deleteSchedule, hostFootprint, lastPollAgoMs, LIVE_POLL_WITHIN_MS, terminateWorkflow } from '../temporal/footprint';
import { agoWords, isoSeconds, unixSeconds } from '../time';
import type * as workflows from '../workflows';
import { jsonOption, print, settingsFrom, UsageError, withSettings } from './common';

type WorkflowType = keyof typeof workflows;
const HEALTH: WorkflowType = 'hostHealth';
/** The host's workflow types as uninstall treats them: the loops' runs from the loop list, circuits, alerts. */
const TYPES: HostWorkflowTypes & { circuit: WorkflowType; alert: WorkflowType } = {
  circuit: 'circuitBreaker',
  alert: 'notifyOperators',
  stoppable: [...LOOP_LIST.flatMap(loopRunTypes), HEALTH],
};

interface Choices {
  circuits?: CircuitChoice;
  alerts?: AlertChoice;
  purgeState?: boolean;
  json?: boolean;
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

export function registerUninstallCommand(program: Command): void {
  withSettings(program.command('uninstall'))
    .description("remove this host id's schedules and runs; choose what happens to open circuits and pending alerts")
    .addOption(
      new Option(
        '--circuits <choice>',
        'running circuit workflows: close them now, hand them over (terminate; the DB row keeps the retry time), or leave them running',
      ).choices(CIRCUIT_CHOICES),
    )
    .addOption(new Option('--alerts <choice>', 'pending alerts: drop them (terminate), or leave them running').choices(ALERT_CHOICES))
    .option('--purge-state', "also drop keeper's own keeper_* tables from the state DB (never ah's)")
    .addOption(jsonOption())
    .action(async (opts: Choices, cmd: Command) => {
      const settings = settingsFrom(cmd);
      const report = await uninstall(settings, opts);
      print(report, !!opts.json, (r) => reportWords(r, settings));
    });
}

async function uninstall(given: Settings, opts: Choices): Promise<UninstallReport> {
  const db = fs.existsSync(path.resolve(given.db)) ? openHostDbAsIs(given) : undefined;
  try {
    const refusal = opts.purgeState && db ? purgeRefusal(db, given.hostId) : undefined;
    if (refusal) throw new UsageError(refusal);
    const temporal = await hostTemporal(given);
    const settings = temporal.settings;
    const { withOperatorClient } = await import('../temporal/client');
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
  opts: Choices,
  workerStopped: boolean,
): Promise<UninstallReport> {
  const host = settings.hostId;
  await refuseLiveWorker(client, host, workerStopped);
  const footprint = await hostFootprint(client, host);
  const flight = inFlight(footprint.running, circuitRows, (sid) => ids.circuit(host, sid), TYPES);
  const refusal = missingChoice(flight, opts);
  if (refusal) {
    process.stdout.write(
      opts.json ? JSON.stringify({ hostId: host, inFlight: flight }, null, 2) + '\n' : inFlightWords(flight, host) + '\n',
    );
    throw new UsageError(refusal);
  }
  const report = emptyReport(host, flight);
  for (const s of footprint.schedules) {
    await deleteSchedule(client, s.scheduleId);
    report.schedulesDeleted.push(s.scheduleId);
  }
  for (const id of flight.loopRuns) if (await terminateWorkflow(client, id, 'keeper uninstall')) report.loopRunsStopped.push(id);
  await settleCircuits(client, settings, flight, opts.circuits, report);
  const alerts = (await hostFootprint(client, host)).running.filter((w) => w.type === TYPES.alert).map((w) => w.workflowId);
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
  const { runOnHost } = await import('../app/run-once');
  const { circuitBreaker } = await import('../workflows/circuitBreaker');
  const { circuitResetSignal } = await import('../workflows/messages');
  const { serviceAttributes } = await import('../search-attributes');
  const run = await runOnHost(settings, async (c) => {
    const out: { serviceId: string; status: string }[] = [];
    for (const serviceId of serviceIds) {
      const handle = await c.workflow.signalWithStart(circuitBreaker, {
        workflowId: ids.circuit(settings.hostId, serviceId),
        taskQueue: taskQueueFor(settings.hostId),
        args: [{ serviceId }],
        signal: circuitResetSignal,
        signalArgs: ['keeper uninstall --circuits close'],
        typedSearchAttributes: serviceAttributes(settings.hostId, serviceId),
      });
      const s = await handle.result();
      out.push({ serviceId, status: s.closedBy === 'reset' ? `closed, service ${s.status}` : 'was no longer open' });
    }
    return out;
  });
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

function retryWords(retryAt: number | null): string {
  return retryAt === null ? 'no retry time' : `retries at ${isoSeconds(retryAt)} (${agoWords(retryAt, unixSeconds())})`;
}

function inFlightWords(f: InFlight, host: string): string {
  const lines = [`in flight for host ${host}:`];
  for (const c of f.circuits)
    lines.push(
      `  circuit ${c.serviceId}  open, ${retryWords(c.retryAt)}, ${c.workflowId ? `workflow ${c.workflowId}` : 'no workflow (the row keeps the time)'}`,
    );
  for (const id of f.strayCircuitWorkflows) lines.push(`  circuit workflow ${id}  running, its row no longer open`);
  for (const id of f.alerts) lines.push(`  alert ${id}  pending delivery`);
  for (const id of f.loopRuns) lines.push(`  loop run ${id}  running (stopped by uninstall: its steps are idempotent)`);
  return lines.join('\n');
}

function reportWords(r: UninstallReport, settings: Settings): string {
  if (r.nothingToRemove) return `nothing to remove for host ${r.hostId}: no schedules, no workflows, no keeper state of it`;
  const queue = taskQueueFor(r.hostId);
  const lines = [`host ${r.hostId} (task queue ${queue})`];
  if (r.schedulesDeleted.length) lines.push(`schedules deleted  ${r.schedulesDeleted.join(', ')}`);
  if (r.loopRunsStopped.length) lines.push(`loop runs stopped  ${r.loopRunsStopped.join(', ')}`);
  for (const c of r.circuits.closed) lines.push(`circuit ${c.serviceId}  ${c.status}`);
  for (const id of r.circuits.handedOver)
    lines.push(`circuit ${id}  handed over: workflow terminated; the state DB row keeps its retry time for whatever runs next`);
  for (const id of r.circuits.left) lines.push(`circuit ${id}  left running: it needs a worker polling ${queue}`);
  for (const c of r.circuits.rowsOnly)
    lines.push(`circuit ${c.serviceId}  open in the state DB with no workflow: ${retryWords(c.retryAt)}; whatever runs next recovers it`);
  for (const id of r.alerts.dropped) lines.push(`alert ${id}  dropped`);
  for (const id of r.alerts.left) lines.push(`alert ${id}  left running: it needs a worker polling ${queue}`);
  if (r.state?.hostForgotten) lines.push(`host id            forgotten in ${settings.db}`);
  if (r.state?.tablesDropped.length)
    lines.push(`keeper state       dropped ${r.state.tablesDropped.length} keeper_* tables; ah's tables untouched`);
  return lines.join('\n');
}
