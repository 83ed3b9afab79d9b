/**
 * A state DB that another keeper host id used before: its schedules and workflows stay on Temporal, polled by no
 * one, until `keeper uninstall --host-id` removes them. The worker says so at start; it is wired here because it
 * reads the state DB and asks Temporal.
 */
import type { Client } from '@temporalio/client';
import { recordHostStart } from '../db/keeper-hosts';
import type { StateDb } from '../db/open';
import type { Logger } from '../log';
import { loopFootprint } from '../loops/schedules';
import { footprintWords } from '../temporal/footprint';
import { isoSeconds, unixSeconds } from '../time';
import { oneLine } from '../text';

/**
 * At worker start: records this host id against the state DB and warns, one line each, of other ids recorded there
 * whose schedules or workflows are still on Temporal: nobody polls their task queue any more. Never stops the worker.
 */
export async function warnOfOtherHostIds(client: Client, db: StateDb, hostId: string, dbPath: string, log: Logger): Promise<string[]> {
  const warned: string[] = [];
  try {
    for (const other of recordHostStart(db, hostId, unixSeconds())) {
      const left = footprintWords(await loopFootprint(client, other.hostId));
      if (!left) continue;
      warned.push(other.hostId);
      log.warn(
        `this state DB was used by keeper host id ${other.hostId} (last started ${isoSeconds(other.lastSeen)}), whose ${left} ` +
          `are still on Temporal and polled by no one under this id; remove them with: keeper uninstall --host-id ${other.hostId} --db ${dbPath}`,
        { oldHostId: other.hostId },
      );
    }
  } catch (err) {
    log.warn('could not check for other host ids recorded against this state DB', { error: oneLine(err) });
  }
  return warned;
}
