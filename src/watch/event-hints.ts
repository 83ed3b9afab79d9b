/**
 * What the worker's event watcher heard, kept for the runs and looks of the same process. An event is a hint, the
 * engine's state is the truth: Docker sends a container's `die` before its container list shows the death (the list
 * is a copy the engine updates only after its exit handler has cleaned up: 40-60 ms later, every time, on Docker
 * 20.10), while an inspect waits for that handler and shows the death. So an observation never trusts a list entry of
 * a container that had an event since keeper's last snapshot of it: it inspects it (src/host/reconcile/observe.ts).
 *
 * It also keeps when the last reconcile pass observed and when it finished, so that a local look that still finds a
 * death after a pass that began after the death's event knows the event path passed over it, and requests a run
 * itself instead of leaving the death to that path (src/watch/look-runner.ts).
 */

/** How long a container's event is kept: longer than any look interval or pass. */
const KEPT_MS = 10 * 60_000;
/** Past this many containers, events older than KEPT_MS are forgotten. */
const PRUNE_AT = 1000;

export interface PassTimes {
  /** When the pass began to observe (unix ms): events after it are the next pass's. */
  observedFromMs: number;
  finishedAtMs: number;
}

export class EventHints {
  /** The latest event of each container (engine time, unix ms), by full id. */
  private readonly latest = new Map<string, number>();
  private pass: PassTimes | undefined;

  /** The watcher heard an event of this container, at this engine time. */
  noteEvent(containerId: string, atMs: number): void {
    this.latest.set(containerId, Math.max(atMs, this.latest.get(containerId) ?? 0));
    if (this.latest.size < PRUNE_AT) return;
    for (const [id, at] of this.latest) if (at < atMs - KEPT_MS) this.latest.delete(id);
  }

  /** The latest event heard of the container; a service row may hold a 12-character prefix of the full id. */
  lastEventAtMs(containerId: string): number | undefined {
    const exact = this.latest.get(containerId);
    if (exact !== undefined) return exact;
    for (const [id, at] of this.latest) if (id.startsWith(containerId)) return at;
    return undefined;
  }

  /** Whether the container had an event at or after `sinceMs`: a list entry of it is no proof of anything. */
  eventSince(containerId: string, sinceMs: number): boolean {
    return (this.lastEventAtMs(containerId) ?? -Infinity) >= sinceMs;
  }

  /** A reconcile pass observed from `observedFromMs` and finished at `finishedAtMs`. */
  notePass(times: PassTimes): void {
    if (!this.pass || times.finishedAtMs >= this.pass.finishedAtMs) this.pass = { ...times };
  }

  /**
   * A pass began after a change at `changeAtMs` and finished before a look that began at `lookStartedMs`: if that look
   * still finds the change, the event path has passed over it.
   */
  passedOver(changeAtMs: number, lookStartedMs: number): boolean {
    return this.pass !== undefined && this.pass.observedFromMs >= changeAtMs && this.pass.finishedAtMs <= lookStartedMs;
  }
}
