/**
 * The state DB's side of `keeper uninstall`: the circuits open in it, the host id records, and --purge-state,
 * which drops keeper's own keeper_* tables and nothing of ah's. The Temporal side is src/temporal/footprint.ts.
 */
import { readEventWatcherState } from '../db/events';
import { dropKeeperTables, forgetHost, hasKeeperTable, openCircuitRows, recordedHosts } from '../db/keeper-hosts';
import type { StateDb } from '../db/open';
import type { OpenCircuit } from '../policy/uninstall';

export function openCircuits(db: StateDb): OpenCircuit[] {
  return openCircuitRows(db);
}

/**
 * Why keeper's tables must stay, or undefined: other host ids recorded against this DB still keep their state in
 * them (their looks, crash records, circuit openings). Uninstall those ids first.
 */
export function purgeRefusal(db: StateDb, hostId: string): string | undefined {
  const others = recordedHosts(db)
    .map((h) => h.hostId)
    .filter((id) => id !== hostId);
  if (others.length === 0) return undefined;
  return (
    `nothing removed: --purge-state would drop the keeper state of host id${others.length === 1 ? '' : 's'} ${others.join(', ')} too; ` +
    `run keeper uninstall --host-id ${others[0]} first`
  );
}

export interface StateRemoved {
  hostForgotten: boolean;
  tablesDropped: string[];
}

/** Forgets this host id, and with `purge` drops every keeper_* table. */
export function removeState(db: StateDb, hostId: string, purge: boolean): StateRemoved {
  const hostForgotten = forgetHost(db, hostId);
  return { hostForgotten, tablesDropped: purge ? dropKeeperTables(db) : [] };
}

/** Whether this host's worker recorded a clean stop: its event watcher's last state is `stopped`. */
export function workerStoppedCleanly(db: StateDb, hostId: string): boolean {
  return hasKeeperTable(db, 'keeper_event_watcher') && readEventWatcherState(db, hostId)?.state === 'stopped';
}
