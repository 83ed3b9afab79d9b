/** `keeper circuit list [--json]` and `keeper circuit reset <serviceId>`. */
import type { Command } from 'commander';
import { circuitList, circuitOf } from '../host/circuit';
import { ids, taskQueueFor } from '../ids';
import { serviceAttributes } from '../search-attributes';
import { runOnHost } from '../app/run-once';
import { isoSeconds } from '../time';
import { circuitBreaker } from '../workflows/circuitBreaker';
import { circuitResetSignal } from '../workflows/messages';
import type { CircuitState } from '../contracts/circuit';
import { jsonOption, print, printOneShot, settingsFrom, table, UsageError, withHost, withSettings } from './common';

export function registerCircuitCommand(program: Command): void {
  const circuit = program.command('circuit').description("this host's circuit breakers");

  withSettings(circuit.command('list'))
    .description('open circuits, and closed ones still escalated (circuit_open_count > 0)')
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const settings = settingsFrom(cmd);
      const rows = await withHost(settings, circuitList);
      print(rows, !!opts.json, () =>
        rows.length === 0
          ? 'no circuits open or escalated'
          : table(
              ['SERVICE', 'TENANT', 'STATE', 'STATUS', 'OPENINGS', 'RETRY AT', 'LAST OPENED', 'WORKFLOW'],
              rows.map((c) => [
                c.serviceId,
                c.tenantId,
                c.open ? 'open' : 'closed',
                c.status,
                c.generation,
                isoSeconds(c.retryAt),
                c.openedAt ? isoSeconds(c.openedAt) : 'by ah',
                ids.circuit(settings.hostId, c.serviceId),
              ]),
            ),
      );
    });

  withSettings(circuit.command('reset'))
    .description('close a circuit now: sends `reset` to its workflow, starting one if none runs')
    .argument('<serviceId>')
    .addOption(jsonOption())
    .action(async (serviceId: string, opts: { json?: boolean }, cmd: Command) => {
      const settings = settingsFrom(cmd);
      const before = await withHost(settings, (deps) => circuitOf(deps, serviceId));
      if (!before) throw new UsageError(`no service ${serviceId} in ${settings.db}`);
      const run = await runOnHost(settings, async (client) => {
        const handle = await client.workflow.signalWithStart(circuitBreaker, {
          workflowId: ids.circuit(settings.hostId, serviceId),
          taskQueue: taskQueueFor(settings.hostId),
          args: [{ serviceId }],
          signal: circuitResetSignal,
          signalArgs: ['keeper circuit reset'],
          typedSearchAttributes: serviceAttributes(settings.hostId, serviceId),
        });
        return handle.result();
      });
      printOneShot(run, !!opts.json, (s: CircuitState) =>
        s.closedBy === 'reset'
          ? `circuit of ${serviceId} closed (generation ${s.generation}); service ${s.status}`
          : `circuit of ${serviceId} was not open; nothing to do`,
      );
    });
}
