/**
 * The dead runs' last lines, read before their crash is recorded: outside its transaction (the engine may be
 * slow), and only while the crash can still be recorded (a retried activity whose crash is already counted
 * reads nothing). They go from the engine to the state DB only: never into a workflow's history or a log line.
 */
import { DockerError } from '../../docker/errors';
import { logTailsRefusedBecause, type LogTail } from '../../db/crash-records';
import { snapshotIsStill } from '../../db/container-snapshots';
import type { CrashRecord } from '../../contracts/reconcile';
import { boundLogTail } from '../../policy/log-tail';
import type { HostDeps } from '../deps';

/** Deaths between two snapshots whose output is read, the most recent ones; a crash loop's earlier runs say the same. */
export const MAX_TAILS_PER_CRASH = 5;
const LIMITS = { keepBytes: 64 * 1024, maxReadBytes: 32 * 1024 * 1024, timeoutMs: 15_000 };

export async function readLogTails({ db, docker }: Pick<HostDeps, 'db' | 'docker'>, c: CrashRecord): Promise<LogTail[]> {
  const facts = c.facts ?? [];
  if (facts.length === 0 || !snapshotIsStill(db, c.serviceId, c.expectedLook)) return [];
  const refused = logTailsRefusedBecause(db);
  const tails: LogTail[] = [];
  for (const [i, f] of facts.entries()) {
    if (refused) tails.push({ tail: '', note: refused });
    else if (i < facts.length - MAX_TAILS_PER_CRASH)
      tails.push({ tail: '', note: `not read: only the last ${MAX_TAILS_PER_CRASH} deaths between two snapshots are` });
    else if (!f.logWindow)
      tails.push({ tail: '', note: f.seenBy === 'missing' ? 'the container is gone' : 'not read: the time of death is unknown' });
    else tails.push(await readTail(docker, c.containerId, f.logWindow));
  }
  return tails;
}

async function readTail(docker: HostDeps['docker'], containerId: string, window: { sinceMs: number; untilMs: number }): Promise<LogTail> {
  try {
    const read = await docker.containerLogsBetween(containerId, window, LIMITS);
    if (!read.complete) return { tail: '', note: `not kept: the run wrote more than ${LIMITS.maxReadBytes >> 20} MB in its last minutes` };
    const tail = boundLogTail(read.text);
    return { tail, note: tail ? '' : 'the run wrote nothing' };
  } catch (err) {
    if (!(err instanceof DockerError)) throw err;
    return { tail: '', note: `logs could not be read: ${err.message}` };
  }
}
