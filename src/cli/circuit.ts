/** `keeper circuit list [--json]` and `keeper circuit reset <serviceId>`. */
import type { Command } from 'commander';
import { circuitList, circuitOf } from '../host/circuit';
import { openingInParens } from '../policy/circuit-words';
import { ids } from '../ids';
import { resetCircuit } from '../temporal/operations';
import { isoSeconds } from '../time';
import type { CircuitState } from '../contracts/circuit';
import { jsonOption, print, printOneShot, settingsFrom, table, UsageError, withAnsweringEngine, withKeeper, withSettings } from './common';

export function registerCircuitCommand(program: Command): void {
  const circuit = program.command('circuit').description("this host's circuit breakers");

  withSettings(circuit.command('list'))
    .description('open circuits, and closed ones still escalated (circuit_open_count > 0): opening, escalation, retry time')
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const settings = settingsFrom(cmd);
      const rows = await withKeeper(settings, (k) => circuitList(k.deps));
      print(rows, !!opts.json, () =>
        rows.length === 0
          ? 'no circuits open or escalated'
          : table(
              ['SERVICE', 'TENANT', 'STATE', 'STATUS', 'OPENING', 'ESCALATION', 'RETRY AT', 'OPENED', 'WORKFLOW'],
              rows.map((c) => [
                c.serviceId,
                c.tenantId,
                c.open ? 'open' : 'closed',
                c.status,
                c.opening ?? '-',
                c.escalation,
                isoSeconds(c.retryAt),
                openedWords(c),
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
      const run = await withAnsweringEngine(settings, async (k) => {
        if (!circuitOf(k.deps, serviceId)) throw new UsageError(`no service ${serviceId} in ${settings.db}`);
        return k.runOnHost((client) => resetCircuit(client, settings.hostId, serviceId, 'keeper circuit reset'));
      });
      printOneShot(run, !!opts.json, (s: CircuitState) =>
        s.closedBy === 'reset'
          ? `circuit of ${serviceId} closed${openingInParens({ opening: s.opening })}; service ${s.status}`
          : `circuit of ${serviceId} was not open; nothing to do`,
      );
    });
}

/**
 * How the circuit's opening came to be: when keeper opened it, when it took it over (ah opened it, or it was open
 * before openings were numbered), or `by ah` for an open one the next tick takes over.
 */
function openedWords(c: ReturnType<typeof circuitList>[number]): string {
  if (c.openedAt) return isoSeconds(c.openedAt);
  if (c.takenOverAt) return `taken over ${isoSeconds(c.takenOverAt)}`;
  return c.opening === null ? 'by ah' : '-';
}
