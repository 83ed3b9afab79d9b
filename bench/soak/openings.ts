/**
 * The circuit openings keeper made during the run, read from its state DB every second (WAL readers are never
 * blocked by a writer, not even by a held write lock). An opening is one transaction (recordCrash) that sets the
 * service's circuit_open, circuit_open_count and circuit_retry_at and its keeper_circuit_openings row, and swaps
 * keeper's look at the container: the look's RestartCount is where keeper stopped counting, so the deaths Docker
 * numbers above it, until the circuit closes, are the open circuit's (ledger.ts). The poll runs every 250 ms: a
 * circuit stays open at least its backoff (30 s and more here), and a close is known within a quarter second.
 */
import type { StateDb } from '../../src/db/open';

export interface Opening {
  serviceId: string;
  containerId: string;
  opening: number;
  openedAtSec: number;
  retryAtSec: number;
  /** RestartCount of keeper's look at the container when it opened (keeper_container_snapshots). */
  lookRestartCount: number;
  detectedAtMs: number;
  /** When the poll first saw it closed (undefined: still open). */
  closedSeenAtMs?: number;
}

interface CircuitRow {
  id: string;
  containerId: string;
  open: number;
  opening: number;
  retryAt: number | null;
  openedAt: number | null;
  lookRestartCount: number | null;
}

export class OpeningWatch {
  readonly openings: Opening[] = [];
  private readonly current = new Map<string, Opening>();
  private timer: NodeJS.Timeout | undefined;
  polls = 0;
  errors = 0;

  constructor(private readonly db: StateDb) {}

  start(everyMs = 1000): void {
    this.timer = setInterval(() => this.poll(), everyMs);
  }

  stop(): void {
    clearInterval(this.timer);
    this.poll();
  }

  isOpen(serviceId: string): boolean {
    return this.current.has(serviceId);
  }

  get openNow(): number {
    return this.current.size;
  }

  poll(): void {
    let rows: CircuitRow[];
    try {
      rows = this.db
        .prepare(
          `SELECT s.id, s.container_id AS containerId, s.circuit_open AS open, o.opening AS opening,
                  s.circuit_retry_at AS retryAt, o.opened_at AS openedAt, l.restart_count AS lookRestartCount
             FROM services s
             LEFT JOIN keeper_circuit_openings o ON o.service_id = s.id
             LEFT JOIN keeper_container_snapshots l ON l.service_id = s.id AND l.container_id = s.container_id
            WHERE s.circuit_open = 1 OR s.id IN (${[...this.current.keys()].map(() => '?').join(',') || "''"})`,
        )
        .all(...this.current.keys()) as CircuitRow[];
    } catch {
      this.errors++;
      return;
    }
    this.polls++;
    const now = Date.now();
    const seen = new Set<string>();
    for (const r of rows) {
      if (r.open !== 1) continue;
      seen.add(r.id);
      const known = this.current.get(r.id);
      if (known && known.opening === r.opening && known.openedAtSec === r.openedAt) continue;
      if (known) known.closedSeenAtMs = now;
      const opening: Opening = {
        serviceId: r.id,
        containerId: r.containerId,
        opening: r.opening,
        openedAtSec: r.openedAt ?? 0,
        retryAtSec: r.retryAt ?? 0,
        lookRestartCount: r.lookRestartCount ?? 0,
        detectedAtMs: now,
      };
      this.openings.push(opening);
      this.current.set(r.id, opening);
    }
    for (const [id, o] of this.current) {
      if (seen.has(id)) continue;
      o.closedSeenAtMs = now;
      this.current.delete(id);
    }
  }
}
