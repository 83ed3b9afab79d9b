/**
 * `keeper schedules list|pause|resume|trigger <loop>`: the operator side of this host's loops' schedules, one per loop
 * of the registry that has one (src/loops/registry.ts). `trigger` keeps Temporal's word for a schedule's run now: it
 * requests one, as the worker's own requests do, but runs it even on a paused schedule.
 */
import { Argument, type Command } from 'commander';
import { SCHEDULED_LOOPS, type LoopName } from '../loops/registry';
import { describeLoopSchedules } from '../loops/schedules';
import { requestRun } from '../temporal/operations';
import { setSchedulePaused, type ScheduleRow } from '../temporal/schedules';
import { jsonOption, print, settingsFrom, table, withKeeper, withSettings } from './common';

export type { ScheduleRow } from '../temporal/schedules';

const loopArgument = () => new Argument('<loop>', 'which loop').choices(SCHEDULED_LOOPS.map((l) => l.name));

export function registerScheduleCommands(program: Command): void {
  const schedules = program.command('schedules').description(`this host's ${SCHEDULED_LOOPS.map((l) => l.name).join(', ')} schedules`);

  withSettings(schedules.command('list'))
    .description("each schedule with its state and next run, and each loop's newest run however it started")
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const settings = settingsFrom(cmd);
      const rows = await withKeeper(settings, (k) => k.withOperatorClient((client) => describeLoopSchedules(client, settings.hostId)));
      print(rows, !!opts.json, (r: ScheduleRow[]) =>
        table(
          ['loop', 'schedule', 'state', 'every', 'next run', 'last scheduled run', 'newest run (any start)'],
          r.map((s) => [
            s.loop,
            s.scheduleId,
            s.paused ? 'paused' : 'active',
            s.every,
            s.nextRun ?? '-',
            s.lastRun ?? '-',
            s.newestRun ? `${s.newestRun.startedAt} ${s.newestRun.type} (${s.newestRun.status})` : '-',
          ]),
        ),
      );
    });

  const action = (verb: 'pause' | 'resume' | 'trigger', what: string) =>
    withSettings(schedules.command(verb))
      .description(what)
      .addArgument(loopArgument())
      .action(async (loop: LoopName, _opts: unknown, cmd: Command) => {
        const settings = settingsFrom(cmd);
        await withKeeper(settings, (k) =>
          k.withOperatorClient(async (client) => {
            if (verb === 'trigger') await requestRun(client, settings.hostId, loop);
            else
              await setSchedulePaused(
                client,
                settings.hostId,
                loop,
                verb === 'pause',
                `${verb === 'pause' ? 'paused' : 'resumed'} with keeper schedules ${verb}`,
              );
          }),
        );
        process.stdout.write(`${loop}: ${verb === 'trigger' ? 'triggered' : verb === 'pause' ? 'paused' : 'resumed'}\n`);
      });
  action('pause', 'stop starting runs of a loop until resumed');
  action('resume', 'start runs of a paused loop again');
  action('trigger', 'start one run of a loop now, or right after the one running');
}
