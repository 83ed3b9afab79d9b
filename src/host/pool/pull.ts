/**
 * Background pulls of the pooled templates' images that the engine lacks (ah pulls a template's image when it is
 * absent; a fresh host would otherwise pool nothing until an operator pulls by hand). The refill's plan hands over
 * the absent images and goes on without them: it never waits on a pull. Each image has one pull at a time, recorded
 * in keeper_image_pulls (what `keeper pool status` shows); a failed one is tried again after a backoff, by the
 * refill it requests once the backoff is over; one that ends requests a refill at once, so the pool fills without
 * waiting for the next scheduled one.
 */
import { beginImagePull, finishImagePull, imagePull, recordPullProgress, type PullAttempt } from '../../db/image-pulls';
import {
  addPullProgress,
  pullAction,
  pullFailureLine,
  pullProgressWords,
  pullRetryDelaySeconds,
  PULL_TIMEOUT_SECONDS,
  type PullProgress,
  type PullRecord,
} from '../../policy/image-pull';
import { unixSeconds } from '../../time';
import type { HostDeps } from '../deps';

type PullDeps = Pick<HostDeps, 'db' | 'docker' | 'log' | 'clock'>;

/** How often a running pull writes its progress to the state DB and the log. */
const PROGRESS_EVERY_MS = 5000;

/** Whether process `pid` runs on this machine (the state DB is local to its host, so its writers are too). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * `requestRefill` requests a refill, saying why (`image X pulled`); it must not throw (what it could not do, it
 * logs). It is called when a pull ends, and when a failed one's next try is due: refills may be far apart.
 */
export type RefillRequest = (why: string) => Promise<void>;

export class ImagePulls {
  private readonly running = new Map<string, Promise<void>>();

  constructor(
    private readonly deps: PullDeps,
    private readonly requestRefill: RefillRequest,
  ) {}

  /** Starts the pull of each image whose pull is due (never waiting on one), and returns each image's pull as recorded. */
  ensure(images: string[]): Map<string, PullRecord> {
    const out = new Map<string, PullRecord>();
    for (const image of new Set(images)) {
      this.startIfDue(image);
      const record = imagePull(this.deps.db, image);
      if (record) out.set(image, record);
    }
    return out;
  }

  /** Resolves once every pull this instance started has ended. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.running.values()]);
  }

  private startIfDue(image: string): void {
    if (this.running.has(image)) return;
    const { db, clock } = this.deps;
    const seen = imagePull(db, image);
    const now = unixSeconds(clock);
    if (pullAction(seen, now, seen ? processAlive(seen.ownerPid) : false) !== 'start') return;
    const attempt: PullAttempt = { image, ownerPid: process.pid, startedAt: now };
    if (!beginImagePull(db, attempt, seen)) return; // another process started it first
    const run = this.pull(attempt)
      .catch((err: Error) => this.deps.log.warn(`image pull of ${image}: ${err.message}`, { loop: 'pool', image }))
      .finally(() => this.running.delete(image));
    this.running.set(image, run);
  }

  private async pull(attempt: PullAttempt): Promise<void> {
    const { db, docker, clock } = this.deps;
    const log = this.deps.log.child({ loop: 'pool', image: attempt.image });
    const attempts = imagePull(db, attempt.image)?.attempts ?? 1;
    log.info(`pulling image ${attempt.image} in the background (attempt ${attempts}); its templates are pooled once it is here`);
    let progress: PullProgress = { layers: {} };
    let writtenAtMs = clock.nowMs();
    const onProgress = (e: Parameters<typeof addPullProgress>[1]) => {
      progress = addPullProgress(progress, e);
      if (clock.nowMs() - writtenAtMs < PROGRESS_EVERY_MS) return;
      writtenAtMs = clock.nowMs();
      recordPullProgress(db, attempt, pullProgressWords(progress), unixSeconds(clock));
      log.info(`pulling image ${attempt.image}: ${pullProgressWords(progress)}`);
    };
    try {
      await docker.pullImage(attempt.image, onProgress, AbortSignal.timeout(PULL_TIMEOUT_SECONDS * 1000));
    } catch (err) {
      const error = pullFailureLine(attempt.image, (err as Error).message);
      const nextTryAt = unixSeconds(clock) + pullRetryDelaySeconds(attempts);
      finishImagePull(db, attempt, { state: 'failed', error, nextTryAt }, unixSeconds(clock));
      log.warn(
        `image pull of ${attempt.image} failed (attempt ${attempts}): ${error}; next try at a refill after ${new Date(nextTryAt * 1000).toISOString()}`,
      );
      // In this process only (unref'd, lost on a restart): the refill after a restart, or a later one, tries it then.
      const due = setTimeout(
        () => void this.requestRefill(`the next pull of image ${attempt.image} is due`),
        (nextTryAt - unixSeconds(clock)) * 1000,
      );
      due.unref();
      return;
    }
    finishImagePull(db, attempt, { state: 'pulled' }, unixSeconds(clock));
    log.info(`pulled image ${attempt.image} (${pullProgressWords(progress)}); requesting a refill`);
    await this.requestRefill(`image ${attempt.image} pulled`);
  }
}
