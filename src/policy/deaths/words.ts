/**
 * Step 7 of a death's story (index.ts): the crash in words, pure. A death in words: `exit code 137 (OOM killed)`,
 * `exit code 139 (SIGSEGV)`, `exit code 3`. The service's last_error and the `crashed` deployment row keep ah's form
 * (`container exited (exit code 1)`) with this cause inside it, so ah's API and dashboards show the reason without
 * knowing keeper. keeper_crash_records and `keeper crashes` say each death's (deathReason).
 */
import type { DeathFacts } from '../../contracts/reconcile';
import type { ShownDeaths } from './shown';

/** What a container that is gone (404) says: ah's words. */
const GONE = 'container not found by reconciler';

/** Linux signal numbers 1-31 (the exit code of a process killed by signal n is 128 + n, by convention). */
const SIGNALS = [
  'HUP',
  'INT',
  'QUIT',
  'ILL',
  'TRAP',
  'ABRT',
  'BUS',
  'FPE',
  'KILL',
  'USR1',
  'SEGV',
  'USR2',
  'PIPE',
  'ALRM',
  'TERM',
  'STKFLT',
  'CHLD',
  'CONT',
  'STOP',
  'TSTP',
  'TTIN',
  'TTOU',
  'URG',
  'XCPU',
  'XFSZ',
  'VTALRM',
  'PROF',
  'WINCH',
  'IO',
  'PWR',
  'SYS',
];

/**
 * The signal an exit code stands for, where one can be told: a shell, and Docker, report a process killed by
 * signal n as 128 + n. (A program may also exit 137 by itself; the convention cannot tell.)
 */
export function signalOf(exitCode: number | null): string | null {
  if (exitCode === null || exitCode <= 128 || exitCode > 128 + SIGNALS.length) return null;
  return `SIG${SIGNALS[exitCode - 129]}`;
}

/** The cause of one death: exit code, then OOM kill or signal. */
export function causeOf(f: Pick<DeathFacts, 'exitCode' | 'oomKilled'>): string {
  if (f.exitCode === null) return f.oomKilled ? 'OOM killed, exit code unknown' : 'exit code unknown';
  const why = f.oomKilled ? 'OOM killed' : signalOf(f.exitCode);
  return why ? `exit code ${f.exitCode} (${why})` : `exit code ${f.exitCode}`;
}

/** What a counted death that the engine had stopped (and did not start again within the grace) says. */
export const ENGINE_STOP_NOTE = 'stopped by the engine and not started again';

/** One death's line in keeper_crash_records and `keeper crashes`. */
export function deathReason(f: DeathFacts & { engineStopped?: boolean }): string {
  if (f.seenBy === 'missing') return GONE;
  if (f.seenBy === 'health-check') return 'health check failed; keeper restarts the container';
  const cause = causeOf(f);
  const restarted = f.seenBy === 'look' ? '' : ', restarted by Docker';
  const error = f.engineError ? `; engine error: ${f.engineError}` : '';
  return `${cause}${restarted}${f.engineStopped ? `, ${ENGINE_STOP_NOTE}` : ''}${error}`;
}

/**
 * The crash's reason as ah writes it in last_error and the deployment row's error_message: for a container
 * down now `container exited (exit code 1)`, for deaths Docker restarted `container restarted by Docker after
 * 2 crashes (last: exit code 3)`.
 */
export function crashReason(facts: (DeathFacts & { engineStopped?: boolean })[], status: string): string {
  const last = facts[facts.length - 1];
  const plural = (n: number) => `${n} crash${n === 1 ? '' : 'es'}`;
  if (!last) return 'container crashed';
  if (last.seenBy !== 'look') return `container restarted by Docker after ${plural(facts.length)} (last: ${causeOf(last)})`;
  const earlier = facts.length > 1 ? `; ${plural(facts.length - 1)} before it restarted by Docker` : '';
  const note = last.engineStopped ? `, ${ENGINE_STOP_NOTE}` : '';
  return `container ${status} (${causeOf(last)})${note}${earlier}`;
}

/** The reason of the crash whose counted `deaths` (oldest first) `shown` found: a gone container's, an unhealthy one's, or theirs. */
export function crashWords(deaths: (DeathFacts & { engineStopped?: boolean })[], shown: ShownDeaths): string {
  if (!shown.evidence.inspected) return GONE;
  if (shown.unhealthy) return 'container unhealthy (health check failed)';
  return crashReason(deaths, shown.evidence.current.state);
}
