/** `keeper circuit list [--json]` and `keeper circuit reset <serviceId>`. */
import type { Command } from 'commander';
import { openStateDb } from '../db/open';
import { listCircuits, readCircuit } from '../db/services';
import { circuitResetSignal, ids, KeeperHost, ServiceId, taskQueueFor, type CircuitState } from '../shared';
import { withTemporal } from '../temporal/run-once';
import { jsonOption, print, settingsFrom, table, UsageError, withSettings } from './common';

const when = (unix: number | null) => (unix ? new Date(unix * 1000).toISOString().replace('.000Z', 'Z') : '-');

export function registerCircuitCommand(program: Command): void {
  const circuit = program.command('circuit').description("this host's circuit breakers");

  withSettings(circuit.command('list'))
    .description('open circuits, and closed ones still escalated (circuit_open_count > 0)')
    .addOption(jsonOption())
    .action((opts: { json?: boolean }, cmd: Command) => {
      const settings = settingsFrom(cmd);
      const db = openStateDb(settings.db);
      try {
        const rows = listCircuits(db);
        print(rows, !!opts.json, () =>
          rows.length === 0
            ? 'no circuits open or escalated'
            : table(
                ['SERVICE', 'TENANT', 'STATE', 'STATUS', 'OPENINGS', 'RETRY AT', 'LAST OPENED', 'WORKFLOW'],
                rows.map((c) => [c.serviceId, c.tenantId, c.open ? 'open' : 'closed', c.status, c.generation, when(c.retryAt),
                  c.openedAt ? when(c.openedAt) : 'by ah', ids.circuit(settings.hostId, c.serviceId)]),
              ),
        );
      } finally {
        db.close();
      }
    });

  withSettings(circuit.command('reset'))
    .description('close a circuit now: sends `reset` to its workflow, starting one if none runs')
    .argument('<serviceId>')
    .addOption(jsonOption())
    .action(async (serviceId: string, opts: { json?: boolean }, cmd: Command) => {
      const settings = settingsFrom(cmd);
      const db = openStateDb(settings.db);
      const before = (() => {
        try {
          return readCircuit(db, serviceId);
        } finally {
          db.close();
        }
      })();
      if (!before) throw new UsageError(`no service ${serviceId} in ${settings.db}`);
      const state = await withTemporal(settings, async (client) => {
        const handle = await client.workflow.signalWithStart('circuitBreaker', {
          workflowId: ids.circuit(settings.hostId, serviceId),
          taskQueue: taskQueueFor(settings.hostId),
          args: [{ serviceId }],
          signal: circuitResetSignal,
          signalArgs: ['keeper circuit reset'],
          typedSearchAttributes: [{ key: KeeperHost, value: settings.hostId }, { key: ServiceId, value: serviceId }],
        });
        return (await handle.result()) as CircuitState;
      });
      print(state, !!opts.json, (s: CircuitState) =>
        s.closedBy === 'reset'
          ? `circuit of ${serviceId} closed (generation ${s.generation}); service ${s.status}`
          : `circuit of ${serviceId} was not open; nothing to do`,
      );
    });
}
