/** `keeper schedules list|pause|resume|trigger <loop>`: the operator side of this host's three schedules. */
import { Argument, type Command } from 'commander';
import { ids, LOOPS, type LoopName } from '../ids';
import { jsonOption, print, settingsFrom, table, withSettings } from './common';

export interface ScheduleRow {
  loop: LoopName;
  scheduleId: string;
  paused: boolean;
  note: string;
  every: string;
  nextRun: string | null;
  lastRun: string | null;
}

const loopArgument = () => new Argument('<loop>', 'which loop').choices(LOOPS);

export function registerScheduleCommands(program: Command): void {
  const schedules = program.command('schedules').description("this host's reconcile, gc and pool schedules");

  withSettings(schedules.command('list'))
    .description('each schedule with its state and next run')
    .addOption(jsonOption())
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const settings = settingsFrom(cmd);
      const { withOperatorClient } = await import('../temporal/client');
      const rows = await withOperatorClient(settings, async (client) => {
        const out: ScheduleRow[] = [];
        for (const loop of LOOPS) {
          const d = await client.schedule.getHandle(ids.schedule(settings.hostId, loop)).describe();
          const every = d.spec.intervals?.[0]?.every;
          out.push({
            loop,
            scheduleId: d.scheduleId,
            paused: d.state.paused,
            note: d.state.note ?? '',
            every: typeof every === 'number' ? `${every / 1000}s` : String(every ?? ''),
            nextRun: d.info.nextActionTimes[0]?.toISOString() ?? null,
            lastRun: d.info.recentActions.at(-1)?.takenAt.toISOString() ?? null,
          });
        }
        return out;
      });
      print(rows, !!opts.json, (r: ScheduleRow[]) =>
        table(
          ['loop', 'schedule', 'state', 'every', 'next run', 'last run'],
          r.map((s) => [s.loop, s.scheduleId, s.paused ? 'paused' : 'active', s.every, s.nextRun ?? '-', s.lastRun ?? '-']),
        ),
      );
    });

  const action = (verb: 'pause' | 'resume' | 'trigger', what: string) =>
    withSettings(schedules.command(verb))
      .description(what)
      .addArgument(loopArgument())
      .action(async (loop: LoopName, _opts: unknown, cmd: Command) => {
        const settings = settingsFrom(cmd);
        const { withOperatorClient } = await import('../temporal/client');
        const { triggerLoop } = await import('../temporal/schedules');
        await withOperatorClient(settings, async (client) => {
          const handle = client.schedule.getHandle(ids.schedule(settings.hostId, loop));
          if (verb === 'pause') await handle.pause('paused with keeper schedules pause');
          else if (verb === 'resume') await handle.unpause('resumed with keeper schedules resume');
          else await triggerLoop(client, settings.hostId, loop);
        });
        process.stdout.write(`${loop}: ${verb === 'trigger' ? 'triggered' : verb === 'pause' ? 'paused' : 'resumed'}\n`);
      });
  action('pause', 'stop starting runs of a loop until resumed');
  action('resume', 'start runs of a paused loop again');
  action('trigger', 'start one run of a loop now, or right after the one running');
}
