/**
 * Crash rules, pure: the window, the threshold, the circuit backoff by opening count, escalation decay, and
 * how many deaths lie between two looks at a container. Workflows, activities and tests share them.
 * All times are unix seconds.
 */
import type { Settings } from '../settings';
import type { ContainerLook, CrashPolicy } from '../contracts/reconcile';

export function crashPolicy(s: Pick<Settings, 'crashWindowMs' | 'crashThreshold' | 'circuitBackoffMs' | 'escalationDecayMs'>): CrashPolicy {
  const sec = (ms: number) => Math.round(ms / 1000);
  return {
    windowSec: sec(s.crashWindowMs),
    threshold: s.crashThreshold,
    backoffSec: s.circuitBackoffMs.map(sec),
    decaySec: sec(s.escalationDecayMs),
  };
}

/** The retry delay for the opening that makes `openCount` (1 = first opening). ah: 30m, 1h, then 4h. */
export function backoffFor(openCount: number, backoffSec: number[]): number {
  const i = Math.min(Math.max(openCount, 1), backoffSec.length) - 1;
  return backoffSec[i];
}

export interface CrashCounters {
  crashCount: number;
  windowStart: number | null;
}

/**
 * Adds `deaths` crashes seen at `now`. The first crash of a new window (none yet, or the old one at least
 * windowSec old) restarts the count at the deaths seen at once; later crashes add.
 */
export function countCrashes(c: CrashCounters, deaths: number, now: number, windowSec: number): CrashCounters {
  const fresh = c.windowStart === null || now - c.windowStart >= windowSec;
  return fresh ? { crashCount: deaths, windowStart: now } : { crashCount: c.crashCount + deaths, windowStart: c.windowStart };
}

/** The circuit opens at the threshold, counted inside a window that is still current. */
export function reachesThreshold(c: CrashCounters, now: number, p: CrashPolicy): boolean {
  return c.windowStart !== null && now - c.windowStart < p.windowSec && c.crashCount >= p.threshold;
}

/**
 * The open count an opening escalates from. After decaySec without an opening keeper recorded, escalation
 * starts over. A count inherited from ah, with no known opening time, stands.
 */
export function decayedOpenCount(openCount: number, lastOpenedAt: number | null, now: number, decaySec: number): number {
  if (lastOpenedAt === null) return openCount;
  return now - lastOpenedAt >= decaySec ? 0 : openCount;
}

export interface CircuitOpening {
  openCount: number;
  retryAt: number;
}

/** What opening the circuit writes: the next generation and its retry time. */
export function openingAt(openCount: number, lastOpenedAt: number | null, now: number, p: CrashPolicy): CircuitOpening {
  const next = decayedOpenCount(openCount, lastOpenedAt, now, p.decaySec) + 1;
  return { openCount: next, retryAt: now + backoffFor(next, p.backoffSec) };
}

// ---- deaths between two looks ----

/** A container that is not running now and that Docker will not bring back by itself counts as a death. */
export function isDown(state: string): boolean {
  return state === 'exited' || state === 'dead' || state === 'missing';
}

/**
 * Deaths between two looks at the same container, `previous` and `current`. Docker increments RestartCount each
 * time its restart policy restarts the container (it enters `restarting` already incremented), and a manual
 * start resets it to 0; a container that is down now and was not before died once more.
 *
 * With no earlier look, only deaths known to be recent count: the container's whole RestartCount if it was
 * created inside the window (all those restarts happened inside it), otherwise just a down container.
 */
export function deathsBetween(
  previous: ContainerLook | null,
  current: ContainerLook,
  createdAtSec: number,
  nowSec: number,
  windowSec: number,
): number {
  const downNow = isDown(current.state) ? 1 : 0;
  if (!previous || previous.containerId !== current.containerId) {
    const recent = nowSec - createdAtSec < windowSec;
    return (recent ? current.restartCount : 0) + downNow;
  }
  const restarts = current.restartCount >= previous.restartCount ? current.restartCount - previous.restartCount : current.restartCount;
  return Math.max(0, restarts + downNow - (isDown(previous.state) ? 1 : 0));
}
