/**
 * Whether every open circuit has a live timer, asked as an operator asks: the `temporal` CLI lists the host's
 * running circuitBreaker workflows by the KeeperHost and ServiceId search attributes, and queries each one's
 * `state` (the opening it holds); keeper's own record of the hold (keeper_circuit_holds) must name the same
 * opening.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { StateDb } from '../../src/db/open';
import { resolveTemporalCli } from '../../src/temporal/dev-server';

const run = promisify(execFile);

export interface OpenCircuit {
  serviceId: string;
  opening: number;
  retryAt: number | null;
  heldOpening: number | null;
}

export interface TimerCheck {
  serviceId: string;
  opening: number;
  retryAt: number | null;
  /** The running workflow's id and the opening its state query returned; undefined when none runs. */
  workflowId?: string;
  workflowOpening?: number;
  workflowPhase?: string;
  heldOpening: number | null;
  problem?: string;
}

async function temporal(address: string, args: string[]): Promise<string> {
  const { stdout } = await run(resolveTemporalCli(), [...args, '--address', address, '--output', 'json'], { timeout: 60_000 });
  return stdout;
}

export function openCircuits(db: StateDb): OpenCircuit[] {
  return db
    .prepare(
      `SELECT s.id AS serviceId, o.opening AS opening, s.circuit_retry_at AS retryAt, h.opening AS heldOpening
         FROM services s LEFT JOIN keeper_circuit_openings o ON o.service_id = s.id
         LEFT JOIN keeper_circuit_holds h ON h.service_id = s.id
        WHERE s.circuit_open = 1 ORDER BY s.id`,
    )
    .all() as OpenCircuit[];
}

/** Checks each open circuit's workflow (running, its state's opening) and hold. */
export async function checkTimers(address: string, hostId: string, open: OpenCircuit[]): Promise<TimerCheck[]> {
  const query = `WorkflowType="circuitBreaker" AND KeeperHost="${hostId}" AND ExecutionStatus="Running"`;
  const listed = JSON.parse((await temporal(address, ['workflow', 'list', '--query', query])) || '[]') as {
    execution: { workflowId: string };
    searchAttributes?: { indexedFields?: Record<string, { data?: string }> };
  }[];
  const byService = new Map<string, string>();
  for (const w of listed) {
    const field = w.searchAttributes?.indexedFields?.ServiceId?.data;
    const serviceId = field ? (JSON.parse(Buffer.from(field, 'base64').toString('utf8')) as string) : undefined;
    if (serviceId) byService.set(serviceId, w.execution.workflowId);
  }
  const checks: TimerCheck[] = [];
  for (const c of open) {
    const check: TimerCheck = { ...c };
    const workflowId = byService.get(c.serviceId);
    if (workflowId) {
      check.workflowId = workflowId;
      const answer = JSON.parse(await temporal(address, ['workflow', 'query', '--workflow-id', workflowId, '--name', 'state'])) as {
        queryResult?: { opening?: number; phase?: string }[];
      };
      check.workflowOpening = answer.queryResult?.[0]?.opening;
      check.workflowPhase = answer.queryResult?.[0]?.phase;
    }
    check.problem = timerProblem(check);
    checks.push(check);
  }
  return checks;
}

function timerProblem(c: TimerCheck): string | undefined {
  if (c.retryAt === null) return 'open with no retry time';
  if (!c.workflowId) return 'no running circuitBreaker workflow found by KeeperHost and ServiceId';
  if (c.workflowOpening !== c.opening) return `its workflow holds opening ${c.workflowOpening}, the circuit is at ${c.opening}`;
  if (c.heldOpening !== c.opening) return `keeper_circuit_holds says opening ${c.heldOpening ?? 'none'}`;
  return undefined;
}
