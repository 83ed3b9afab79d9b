/**
 * After the story (index.ts): a death recorded as exit 137 whose OOM kill the engine reported only later. The
 * engine's `oom` event can come after the die, and after the inspect that still said OOMKilled false, from which
 * the death was recorded as a SIGKILL; src/host/reconcile/oom-confirmations.ts reads the `oom` events of the deaths
 * recorded lately, and this says which records they correct. All times are unix milliseconds.
 */
import { OOM_EVENT_AFTER_DEATH_MS, OOM_EVENT_BEFORE_DEATH_MS } from './evidence';

/**
 * Which recorded deaths an `oom` event confirms as OOM kills: each event goes to the nearest death of its container
 * that it can belong to (from a little before it to OOM_EVENT_AFTER_DEATH_MS after), one death per event.
 */
export function oomConfirmed(
  deaths: { id: number; containerId: string; diedAtMs: number }[],
  ooms: { containerId: string; atMs: number }[],
): number[] {
  const confirmed = new Set<number>();
  for (const oom of ooms) {
    const near = deaths
      .filter((d) => !confirmed.has(d.id) && oom.containerId.startsWith(d.containerId))
      .filter((d) => oom.atMs >= d.diedAtMs - OOM_EVENT_BEFORE_DEATH_MS && oom.atMs <= d.diedAtMs + OOM_EVENT_AFTER_DEATH_MS)
      .sort((a, b) => Math.abs(oom.atMs - a.diedAtMs) - Math.abs(oom.atMs - b.diedAtMs));
    if (near[0]) confirmed.add(near[0].id);
  }
  return [...confirmed];
}
