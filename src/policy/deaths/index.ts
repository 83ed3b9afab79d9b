/**
 * A death's story, read forward: from what keeper has of a service's container when it looks to the decision that
 * counts its deaths. Each step is a pure function of what the steps before it found; none calls back into an
 * earlier one. The effects lie between the acts, in host/ and db/, and only gather evidence or apply the decision:
 *
 * At the look (src/host/reconcile/observe.ts has listed and inspected the container, or had a 404):
 *   1. evidence.ts     what keeper has of it: the look now, the inspect, keeper's stored view, what was counted before
 *   2. shown.ts        how many deaths the look shows: RestartCount's delta, a container down now or gone, one
 *                      turned unhealthy; at keeper's first look, its baseline
 * With the engine's events (src/host/reconcile/crash-evidence.ts reads them once for all that may show deaths):
 *   3. counted.ts      which deaths count, and which die event is whose; at a first look, those after the baseline
 *   4. facts.ts        each death's facts: exit code, OOM kill, the engine's error, its run's log window
 *   5. engine-stop.ts  a death the engine itself caused is held, not counted, for the grace
 *   6. dating.ts       each death's time: its own, or spread over what keeper did not see as Docker's backoff lays it
 *   7. words.ts        the crash in words: ah's reason
 * In recordCrash's transaction (src/db/services.ts), with the service row's own counters:
 *   8. decision.ts     expected exits, the window and threshold at each death's time, the circuit's opening
 * After it, late-oom.ts: a later `oom` event corrects a death recorded as a SIGKILL.
 */
import type { ContainerSnapshot, CountedDeath, CrashRecord } from '../../contracts/reconcile';
import { deathsCounted } from './counted';
import { datedDeaths, type Dated } from './dating';
import { engineStopHold, type EngineStopHold } from './engine-stop';
import type { ContainerEventFact } from './evidence';
import { deathFacts } from './facts';
import type { ShownDeaths } from './shown';
import { crashWords } from './words';

/** Act 1, at the look: the deaths it shows (step 2 of the evidence of step 1). */
export { deathsShown } from './shown';
/** Act 3, in recordCrash's transaction: the decision (step 8). */
export { crashDecision } from './decision';

/** What act 2 found: a crash to record, or none (the look is stored as any other). */
export interface DeathsFound {
  /** The crash, its deaths dated; absent when no death counted after all. */
  crash?: CrashRecord & { restart: boolean };
  /** The look to store: the current one, or, for a held engine stop, as if the engine had not stopped it yet. */
  look: ContainerSnapshot;
  /** A death the engine caused was held, not counted. */
  heldEngineStop: boolean;
  /** No death counted: a crashed service whose container has been up long enough is back up. */
  backUp: boolean;
}

/**
 * Act 2, with this container's engine `events` since the look before (none for a gone container): the deaths
 * `shown` counts, their facts, the engine-stop hold, their times and the crash's words, at `nowMs`.
 */
export function deathsFound(shown: ShownDeaths, events: ContainerEventFact[], nowMs: number, graceMs: number): DeathsFound {
  const counted = deathsCounted(shown, events);
  const facts = deathFacts(counted, shown, events, nowMs);
  const stop = engineStopHold(facts, shown, counted, events, nowMs, graceMs);
  const found = { look: stop.look, heldEngineStop: stop.held, backUp: false };
  if (stop.deaths.length === 0) return { ...found, backUp: shown.backUpIfNoDeaths };
  const dated = datedDeaths(stop.deaths, shown, counted, events, nowMs);
  return { ...found, crash: crashOf(shown, stop, dated, crashWords(dated, shown)) };
}

function crashOf(shown: ShownDeaths, stop: EngineStopHold, dated: Dated<CountedDeath>[], reason: string): DeathsFound['crash'] {
  const { serviceId, containerId, stored, rules } = shown.evidence;
  return {
    serviceId,
    containerId,
    expectedLook: stored,
    nextLook: stop.look,
    deaths: dated.length,
    reason,
    statusAfter: stop.statusAfter,
    restart: shown.unhealthy,
    facts: dated,
    ...(rules && { rules }),
  };
}
