/**
 * Step 2 of a death's story (index.ts), at the look: how many deaths it shows. Docker's RestartCount counts the
 * restarts of its restart policy between two looks, a container down now died once more, one that turned unhealthy
 * counts as a death, and a container gone (404) since the last look died too. At keeper's first look at a
 * container there is no earlier look to count from: its baseline (what was counted before) is set here, and its
 * die events decide later which deaths fall after it (counted.ts). Whatever may show a death is read on: the
 * engine's events are then read once for all such containers. All times are unix seconds unless a name says ms.
 */
import type { ContainerSnapshot } from '../../contracts/reconcile';
import type { CountedBefore, DeathEvidence, PreviousSnapshot } from './evidence';

/** A container that has run this long again takes its service back to `running`. */
export const BACK_UP_AFTER_SEC = 10;

/** A container that is not running now and that Docker will not bring back by itself counts as a death. */
export function isDown(state: string): boolean {
  return state === 'exited' || state === 'dead' || state === 'missing';
}

/**
 * Deaths between two looks at the same container, `previous` and `current`. Docker increments RestartCount each
 * time its restart policy restarts the container (it enters `restarting` already incremented), and a manual
 * start resets it to 0; a container that is down now and was not before died once more.
 *
 * With no earlier look, this is the rule for when no die event can be had (deathsAtFirstSnapshot dates them first):
 * only deaths known to be recent count, the container's whole RestartCount if it was created inside the window
 * (all those restarts happened inside it), otherwise just a down container.
 */
export function deathsBetween(
  previous: ContainerSnapshot | null,
  current: ContainerSnapshot,
  createdAtSec: number,
  nowSec: number,
  windowSec: number,
  countResetSinceLook = false,
): number {
  const downNow = isDown(current.state) ? 1 : 0;
  if (!previous || previous.containerId !== current.containerId) {
    const recent = nowSec - createdAtSec < windowSec;
    return (recent ? current.restartCount : 0) + downNow;
  }
  const counted = !countResetSinceLook && current.restartCount >= previous.restartCount;
  const restarts = counted ? current.restartCount - previous.restartCount : current.restartCount;
  return Math.max(0, restarts + downNow - (isDown(previous.state) ? 1 : 0));
}

/**
 * Whether the container's RestartCount was set back to 0 since keeper's look before (S1 in RELIABILITY.md): the
 * engine started after that look, and the container has been started since the engine did (dockerd's start brings
 * back every container its policy restarts, each with RestartCount 0). Then the count is the deaths since the
 * engine's start, where the delta would take the old count off them: told by the container's own times, also when
 * the engine's events of those deaths are gone. Whole seconds: a look in the engine's first second reads as after it.
 */
export function countResetSinceLook(e: DeathEvidence): boolean {
  const startedAtSec = e.engineStartedAtSec;
  const runStartedAtMs = e.inspected?.run.startedAtMs ?? null;
  if (!e.previous || startedAtSec === undefined || startedAtSec === null || runStartedAtMs === null) return false;
  return e.previous.seenAt < startedAtSec && runStartedAtMs >= startedAtSec * 1000;
}

/** What keeper's first look at a container takes as already seen, and what it may count. */
export interface FirstSnapshot {
  /**
   * Deaths up to this moment are the baseline: before the container existed, before keeper ran on this state DB
   * (ah's to count, and its row holds what it counted), or already counted on the service row (a crash window
   * inherited from ah or from an earlier keeper: its last crash, its window's start, keeper's own records of this
   * container). Later ones are counted, each dated by its die event.
   */
  countFromMs: number;
  /**
   * Restarts whose die events are gone (the engine restarted, its 256-event buffer rolled over) count too: the
   * old first-look rule, for a container created inside the window with nothing counted since.
   */
  countsUndated: boolean;
  /** The row already shows the service crashed, so a container down since before countFromMs was counted then. */
  rowCrashed: boolean;
}

/** A time column as unix seconds; a value that is no time (a bad row) counts as "up to now": nothing is counted twice. */
function counted(v: unknown, nowSec: number): number | null {
  if (v === null || v === undefined) return null;
  return typeof v === 'number' && Number.isFinite(v) ? v : nowSec;
}

/** The baseline of keeper's first look at a container created at `createdAtSec`, with the service's window. */
export function firstSnapshotOf(createdAtSec: number, row: CountedBefore, nowSec: number, windowSec: number): FirstSnapshot {
  const marks = [row.lastCrashedAt, row.crashWindowStart, row.lastRecordedAt].map((v) => counted(v, nowSec));
  // Counted at a whole second: any death up to the end of that second may have been counted then.
  const countedUntilMs = Math.max(...marks.map((m) => (m === null ? -Infinity : (m + 1) * 1000)));
  const createdAtMs = createdAtSec * 1000;
  const countFromMs = Math.max(createdAtMs, countedUntilMs, (row.keeperArrivedAt ?? -Infinity) * 1000);
  return {
    countFromMs,
    countsUndated: nowSec - createdAtSec < windowSec && countFromMs === createdAtMs,
    rowCrashed: row.status === 'crashed',
  };
}

/** Deaths a look shows, or may (keeper's first look at a container Docker restarted), on their way to be counted. */
export interface ShownDeaths {
  kind: 'deaths';
  evidence: DeathEvidence;
  /** RestartCount's, and one more when the container is down now (at a first look, its die events decide: counted.ts). */
  deaths: number;
  /** keeper's first look at this container: its deaths are counted from their die events after this baseline. */
  firstLook?: FirstSnapshot;
  /** The last death left the container down (exited, dead, or gone): the others were restarts by Docker. */
  downNow: boolean;
  /** The container turned unhealthy since the last look: a death of its own, and keeper restarts it. */
  unhealthy: boolean;
  /** The service's status once its deaths are counted: `running` when Docker brought it back up long enough ago. */
  statusAfter: 'crashed' | 'running';
  /** What keeper did not see began here: its last look at the container, or a first look's baseline. */
  sinceMs: number;
  /**
   * The engine's events to read for this container: from its last look, or from its creation at a first look (to
   * tell gone events from the baseline). Absent when the container is gone: nothing of its deaths is left to read.
   */
  eventsToRead?: { fullId: string; fromMs: number };
  /** No death counted after all: a crashed service whose container has been up long enough is back up. */
  backUpIfNoDeaths: boolean;
}

/** What a look shows: deaths (or maybe some), none, or a crashed service's container gone (the service stops). */
export type Shown = ShownDeaths | { kind: 'none' } | { kind: 'gone' };

const NONE: Shown = { kind: 'none' };

/** The deaths the look in `e` shows. */
export function deathsShown(e: DeathEvidence): Shown {
  const { previous, current, inspected } = e;
  if (!inspected) return goneShows(e);
  const deaths = deathsBetween(previous, current, inspected.createdAtSec, e.nowSec, e.windowSec, countResetSinceLook(e));
  const unhealthy = current.health === 'unhealthy' && previous?.health !== 'unhealthy' && current.state === 'running';
  // keeper's first look at a container Docker restarted: its die events decide which deaths count.
  const firstLook = previous ? undefined : firstSnapshotOf(inspected.createdAtSec, e.countedBefore as CountedBefore, e.nowSec, e.windowSec);
  const mayHaveDied = firstLook ? current.restartCount > 0 || isDown(current.state) : deaths > 0;
  if (!mayHaveDied && !unhealthy) return NONE;
  const down = isDown(current.state) || current.state === 'restarting' || unhealthy || e.upSec < BACK_UP_AFTER_SEC;
  const sinceMs = firstLook ? firstLook.countFromMs : (previous as PreviousSnapshot).seenAt * 1000;
  return {
    kind: 'deaths',
    evidence: e,
    deaths,
    ...(firstLook && { firstLook }),
    downNow: isDown(current.state),
    unhealthy,
    statusAfter: down ? 'crashed' : 'running',
    sinceMs,
    eventsToRead: { fullId: inspected.fullId, fromMs: firstLook ? inspected.createdAtSec * 1000 : sinceMs },
    backUpIfNoDeaths: !!firstLook && e.rowStatus === 'crashed' && current.state === 'running' && e.upSec >= BACK_UP_AFTER_SEC,
  };
}

/**
 * A container that is gone (404). A crashed service's container, seen gone before or never seen: the service is
 * stopped, no death. Seen there before: it died once more. A running service's: the deaths since the last look.
 */
function goneShows(e: DeathEvidence): Shown {
  const { previous } = e;
  const gone = (deaths: number): ShownDeaths => ({
    kind: 'deaths',
    evidence: e,
    deaths,
    downNow: true,
    unhealthy: false,
    statusAfter: 'crashed',
    // Its deaths lie somewhere since keeper's last look.
    sinceMs: (previous?.seenAt ?? e.nowSec) * 1000,
    backUpIfNoDeaths: false,
  });
  if (e.rowStatus === 'crashed') return previous?.state === 'missing' || !previous ? { kind: 'gone' } : gone(1);
  const deaths = deathsBetween(previous, e.current, 0, e.nowSec, e.windowSec);
  return deaths === 0 ? NONE : gone(deaths);
}
