/** The last result of each loop on this host, for `keeper status` and `keeper pool status`. */
import type { StateDb } from './open';

export interface LoopResult<T = unknown> {
  loop: string;
  hostId: string;
  workflowId: string;
  finishedAt: number; // unix seconds
  result: T;
}

export function recordLoopResult(db: StateDb, r: LoopResult): void {
  db.prepare(
    `INSERT INTO keeper_loop_results (loop, host_id, workflow_id, finished_at, result_json) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT(loop) DO UPDATE SET host_id = excluded.host_id, workflow_id = excluded.workflow_id,
       finished_at = excluded.finished_at, result_json = excluded.result_json`,
  ).run(r.loop, r.hostId, r.workflowId, r.finishedAt, JSON.stringify(r.result));
}

export function lastLoopResults(db: StateDb): LoopResult[] {
  const rows = db.prepare('SELECT loop, host_id, workflow_id, finished_at, result_json FROM keeper_loop_results ORDER BY loop').all() as {
    loop: string;
    host_id: string;
    workflow_id: string;
    finished_at: number;
    result_json: string;
  }[];
  return rows.map((r) => ({
    loop: r.loop,
    hostId: r.host_id,
    workflowId: r.workflow_id,
    finishedAt: r.finished_at,
    result: JSON.parse(r.result_json) as unknown,
  }));
}

/** The last result of one loop, or null before its first run. */
export function lastLoopResult<T>(db: StateDb, loop: string): LoopResult<T> | null {
  return (lastLoopResults(db).find((r) => r.loop === loop) as LoopResult<T> | undefined) ?? null;
}
