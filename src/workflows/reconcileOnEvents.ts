/**
 * The host's reconcile run for Docker events, started (or signalled, when one is running) by the event watcher
 * with signal-with-start of `keeper-<host>-reconcile-events`: one pass of local activities, and one more for the
 * requests that arrive while it runs. A workflow type of its own, not a reconcileTick: it was born after the
 * `loop-local-activities` patch, so its runs record no patch marker and no `TemporalChangeVersion` upsert, and a
 * crash costs its start, a marker batch per pass and nothing else.
 */
import type { TickSummary } from '../contracts/reconcile';
import { passWhileRequested } from './reconcile-passes';

export async function reconcileOnEvents(): Promise<TickSummary> {
  return passWhileRequested();
}
