/** The runs the deaths tests inspect: a moment, and a container that exited 3 five seconds after it started. */
import type { RunState } from '../../../src/policy/deaths/evidence';

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
