/**
 * Deaths recorded as exit 137 whose OOM kill the engine reported only later. Docker tells the kernel's OOM kill in an
 * `oom` event of its own, apart from the exit: under load it comes after the `die`, and after the inspect that still
 * says OOMKilled false, from which the tick recorded the death as a SIGKILL. For the deaths recorded lately, the
 * engine's `oom` events (the watcher asks for a tick when one arrives) say which were OOM kills; the apply step
 * corrects their records. The cgroup's own oom_kill counter cannot help then: a dead run's cgroup is gone, and a
 * restarted container's is new.
 */
import { deathsAwaitingOom, type AwaitingOom } from '../../db/crash-records';
import type { StateDb } from '../../db/open';
import type { TickObservation } from '../../contracts/reconcile';
import { OOM_EVENT_AFTER_DEATH_MS } from '../../policy/deaths/evidence';
import { oomConfirmed } from '../../policy/deaths/late-oom';
import type { EventsRead } from './crash-evidence';

/** How long after it was recorded a death's OOM kill is still looked for: the oom event comes within seconds. */
export const OOM_RECHECK_SEC = 5 * 60;

/** The recorded deaths whose OOM kill the engine may still report (read from the state DB, before the tick's events). */
export function deathsAwaitingOomAt(db: StateDb, nowMs: number): AwaitingOom[] {
  return deathsAwaitingOom(db, Math.floor(nowMs / 1000) - OOM_RECHECK_SEC).filter(
    (d) => d.diedAtMs + OOM_EVENT_AFTER_DEATH_MS >= nowMs - OOM_RECHECK_SEC * 1000,
  );
}

/** From when their `oom` events lie in the engine's events; undefined when no death awaits one. */
export function oomEventsFromMs(deaths: AwaitingOom[]): number | undefined {
  return deaths.length === 0 ? undefined : Math.min(...deaths.map((d) => d.diedAtMs)) - 2_000;
}

/** The awaiting deaths the tick's events confirm as OOM kills, for the apply step to correct. */
export function confirmOomKills(deaths: AwaitingOom[], events: EventsRead, obs: TickObservation): void {
  if (deaths.length === 0) return;
  const ooms = [...events.byContainer].flatMap(([containerId, facts]) =>
    facts.filter((f) => f.action === 'oom').map((f) => ({ containerId, atMs: f.atMs })),
  );
  const confirmed = oomConfirmed(deaths, ooms);
  if (confirmed.length > 0) obs.oomConfirmed = confirmed;
}
