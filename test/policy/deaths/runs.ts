/**
 * The runs the deaths tests inspect: a moment, a container that exited 3 five seconds after it started, and the
 * deaths a later look shows.
 */
import type { DeathEvidence, RunState } from '../../../src/policy/deaths/evidence';
import { deathsShown } from '../../../src/policy/deaths/shown';

export const T = 1_800_000_000_000;

export const exited: RunState = {
  status: 'exited',
  exitCode: 3,
  oomKilled: false,
  error: '',
  startedAtMs: T,
  finishedAtMs: T + 5_000,
  restartPolicy: 'no',
  unhealthySinceMs: null,
};

/**
 * The evidence of a later look at c1: keeper's look before it at T with RestartCount `before` (stored as it is), the
 * inspect now showing `now` and the run `run`.
 */
export function laterEvidence(
  before: number,
  now: { state: string; restartCount: number },
  run: RunState,
  upSec: number,
  nowSec: number,
): DeathEvidence {
  return {
    serviceId: 'svc',
    containerId: 'c1',
    rowStatus: 'running',
    stored: { containerId: 'c1', state: 'running', restartCount: before, health: '' },
    previous: { containerId: 'c1', state: 'running', restartCount: before, health: '', seenAt: T / 1000 },
    current: { containerId: 'c1', ...now, health: '' },
    inspected: { fullId: 'c1full', createdAtSec: T / 1000 - 600, run },
    upSec,
    countedBefore: null,
    windowSec: 600,
    nowSec,
  };
}

/** The deaths that later look shows (laterEvidence). */
export function laterLook(before: number, now: { state: string; restartCount: number }, run: RunState, upSec: number, nowSec: number) {
  const shown = deathsShown(laterEvidence(before, now, run, upSec, nowSec));
  if (shown.kind !== 'deaths') throw new Error(`expected deaths, got ${shown.kind}`);
  return shown;
}
