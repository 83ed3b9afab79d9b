/**
 * "Never loses a circuit timer", checked during the run too, not only at its end: every 20 s, unless a host fault is
 * under way or ended less than 15 s ago, every circuit open for at least 15 s whose retry time is at least 3 s away
 * must have its live timer (timers.ts). keeper's look hands an opening no workflow holds to a tick within seconds.
 */
import type { StateDb } from '../../src/db/open';
import { checkTimers, openCircuits, type TimerCheck } from './timers';

const OPEN_AT_LEAST_SEC = 15;
const RETRY_AT_LEAST_SEC = 3;

export class TimerAudit {
  audits = 0;
  checked = 0;
  /** Audits skipped because the server did not answer the CLI (a restart under way). */
  skipped = 0;
  readonly problems: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(
    private readonly db: StateDb,
    private readonly address: () => string,
    private readonly hostId: string,
    /** Whether a host fault is under way, or ended less than OPEN_AT_LEAST_SEC ago. */
    private readonly quietSinceMs: () => number | undefined,
  ) {}

  start(everyMs = 20_000): void {
    this.timer = setInterval(() => void this.audit(), everyMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private due(nowSec: number) {
    const openedAt = new Map(
      (this.db.prepare('SELECT service_id AS id, opened_at AS at FROM keeper_circuit_openings').all() as { id: string; at: number }[]).map(
        (r) => [r.id, r.at],
      ),
    );
    return openCircuits(this.db).filter(
      (c) =>
        (openedAt.get(c.serviceId) ?? nowSec) <= nowSec - OPEN_AT_LEAST_SEC &&
        c.retryAt !== null &&
        c.retryAt >= nowSec + RETRY_AT_LEAST_SEC,
    );
  }

  private async audit(): Promise<void> {
    const quiet = this.quietSinceMs();
    if (this.running || quiet === undefined || Date.now() - quiet < OPEN_AT_LEAST_SEC * 1000) return;
    this.running = true;
    try {
      const due = this.due(Math.floor(Date.now() / 1000));
      let checks: TimerCheck[];
      try {
        checks = await checkTimers(this.address(), this.hostId, due);
      } catch {
        this.skipped++;
        return;
      }
      this.audits++;
      this.checked += checks.length;
      // Closed by its timer meanwhile: it had one.
      const stillOpen = new Set(openCircuits(this.db).map((c) => `${c.serviceId}/${c.opening}`));
      for (const c of checks) {
        if (c.problem && stillOpen.has(`${c.serviceId}/${c.opening}`))
          this.problems.push(`${new Date().toISOString()}: ${c.serviceId} open (opening ${c.opening}): ${c.problem}`);
      }
    } finally {
      this.running = false;
    }
  }
}
