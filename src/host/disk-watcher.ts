/**
 * The disk watcher (W-D4 of docs/ah-differences.md): every few seconds it measures the guarded paths (statfs
 * only, no Temporal call) and, when a path crosses the block threshold, requests one GC sweep at once
 * (src/policy/disk.ts decides: one per crossing, at most one per cooldown). The sweep is an ordinary gcSweep
 * run through the host's gc schedule, so every age and ownership guard applies unchanged. It also keeps the
 * pool's hold (src/host/disk.ts): set at the block, cleared under the warning threshold. Each check sets the disk
 * metrics (keeper_disk_used_ratio and the thresholds), which the disk alerts read.
 */
import { whenWritable } from '../db/busy';
import { dockerRootDir, guardedPaths, readDiskUsage, updatePoolHold, type GuardDeps, type GuardedPath } from './disk';
import type { HostDeps } from './deps';
import type { DiskVerdict } from '../contracts/disk';
import { diskPressureStep, judgeDisk, NO_DISK_PRESSURE, type DiskPressureState } from '../policy/disk';
import { oneLine } from '../text';
import { recordDiskVerdict } from '../metrics';

/** How often the paths are measured: a statfs each, so cheap; short enough to act before a filling disk is full. */
export const DISK_CHECK_INTERVAL_MS = 10_000;
/** No two sweeps are requested within this long, however often usage goes back and forth over the threshold. */
export const DISK_SWEEP_COOLDOWN_MS = 60_000;

export interface DiskWatcherOptions {
  deps: GuardDeps & Pick<HostDeps, 'db' | 'log' | 'settings' | 'clock' | 'metrics'>;
  /** Starts one GC sweep now (the worker's gc requester, which keeps it until Temporal takes it); false: declined (paused). */
  requestSweep: () => Promise<boolean | void>;
  intervalMs?: number;
  cooldownMs?: number;
}

export interface DiskCheck {
  verdict: DiskVerdict;
  /** A sweep was requested by this check. */
  sweepRequested: boolean;
}

export class DiskWatcher {
  private state: DiskPressureState = NO_DISK_PRESSURE;
  private paths: GuardedPath[] | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = true;
  /** Checks done, and sweeps requested (accepted or declined) by them. */
  checks = 0;
  sweepsRequested = 0;

  constructor(private readonly opts: DiskWatcherOptions) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /** One check: measure, keep the pool hold, and request a sweep if the policy says so. */
  async check(): Promise<DiskCheck> {
    const { deps, requestSweep } = this.opts;
    const paths = await this.guarded();
    const verdict = judgeDisk(readDiskUsage(paths), deps.settings.diskWarnPercent, deps.settings.diskBlockPercent);
    await whenWritable('the pool hold', () => updatePoolHold(deps, verdict)); // kept as a condition: the same again is no change
    if (deps.metrics) recordDiskVerdict(deps.metrics, verdict);
    const now = deps.clock.nowMs();
    const { next, sweep } = diskPressureStep(this.state, verdict, now, this.opts.cooldownMs ?? DISK_SWEEP_COOLDOWN_MS);
    this.state = next;
    this.checks++;
    if (!sweep) return { verdict, sweepRequested: false };
    this.sweepsRequested++;
    // Not awaited: a request is kept until Temporal takes it, and the disk must still be watched meanwhile.
    void Promise.resolve(requestSweep()).then(
      (accepted) => {
        if (accepted === false)
          deps.log.info('disk pressure: a GC sweep was not started, the gc schedule is paused', { disk: verdict.message });
        else deps.log.warn('disk pressure: started a GC sweep now', { disk: verdict.message });
      },
      (err) => {
        // Requested again once the cooldown is over, while the path is still at the block.
        this.state = { ...this.state, swept: false };
        deps.log.warn('disk pressure: could not start a GC sweep; trying again after the cooldown', {
          disk: verdict.message,
          error: oneLine(err),
        });
      },
    );
    return { verdict, sweepRequested: true };
  }

  /** The paths, with Docker's root dir asked of the engine once (again only while the engine has not told it). */
  private async guarded(): Promise<GuardedPath[]> {
    if (this.paths && !this.paths.some((p) => p.error !== undefined)) return this.paths;
    const { docker, settings } = this.opts.deps;
    this.paths = guardedPaths(settings, await dockerRootDir(docker), docker.remoteAddress);
    return this.paths;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.check()
        .catch((err) => this.opts.deps.log.warn('disk watcher: check failed', { error: oneLine(err) }))
        .finally(() => this.schedule(this.opts.intervalMs ?? DISK_CHECK_INTERVAL_MS));
    }, delayMs);
    this.timer.unref?.();
  }
}
