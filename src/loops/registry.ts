/**
 * keeper's loops: the one list. Each entry is a loop's unit (src/loops/<loop>.ts, src/loops/unit.ts says what a unit
 * declares); adding a loop is one file here and one entry below (docs/development.md, "Adding a loop"). Everything
 * that spans the loops reads this list: the worker's activities (createActivities), the schedules, the looks and
 * the run requests (src/app/host-watch.ts), uninstall, `keeper status`, `keeper schedules`, the README's settings
 * table, bench:cost and the docs' tests.
 */
import { createHostActivities, type HostActivities } from '../activities';
import { recordLoopRun } from '../activities/loop-results';
import type { HostDeps } from '../host/deps';
import { gcLoop } from './gc';
import { poolLoop } from './pool';
import { reconcileLoop } from './reconcile';
import type { BackstopSchedule, LoopUnit } from './unit';

export const LOOPS = [reconcileLoop, gcLoop, poolLoop] as const;

export type Loop = (typeof LOOPS)[number];
export type LoopName = Loop['name'];
export const LOOP_NAMES: readonly LoopName[] = LOOPS.map((l) => l.name);

/** A loop with a backstop schedule. */
export type ScheduledLoop = Loop & { schedule: BackstopSchedule };
export const SCHEDULED_LOOPS: readonly ScheduledLoop[] = LOOPS.filter((l): l is ScheduledLoop => l.schedule !== undefined);

/** The loop of this name, or undefined (a row a newer keeper recorded, a name an operator mistyped). */
export function loopNamed(name: string): Loop | undefined {
  return LOOPS.find((l) => l.name === name);
}

/** The workflow types of a loop's runs: what its schedule starts, and its other runs. */
export function runTypes(loop: LoopUnit): string[] {
  return [...(loop.schedule ? [loop.schedule.workflowType] : []), ...Object.values(loop.otherRuns ?? {})];
}

/** The loop whose run a workflow of this type is, or undefined (a circuit, an alert, a health check). */
export function loopOfWorkflowType(type: string): LoopName | undefined {
  return LOOPS.find((l) => runTypes(l).includes(type))?.name;
}

type Intersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/** Every activity the worker registers: the host's own (health, circuits, alerts) and each loop's. */
export type Activities = HostActivities & Intersection<ReturnType<Loop['activities']>>;

/** The worker's activities, for one host; each loop records its runs' results with what they add to the metrics. */
export function createActivities(deps: HostDeps): Activities {
  const loops = LOOPS.map((l) => l.activities(deps, (workflowId, result) => recordLoopRun(deps, l.name, workflowId, result, l.metrics)));
  return Object.assign(createHostActivities(deps), ...loops) as Activities;
}
