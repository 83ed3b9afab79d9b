/**
 * A death's story, read forward, in three steps: the effects *gather* the evidence, this folder *decides* in pure
 * code, and the effects *apply* the decision. Each step of the decision is a pure function of what the steps before
 * it found; none calls back into an earlier one, and none reads anything itself.
 *
 * Gather (src/host/reconcile/observe.ts): the engine's list, the inspects it needs (or a 404), keeper's stored view,
 * and then one read of the engine's events for the whole tick, for the deaths and the OOM kills alike, with whether
 * that read reached the tick's end (crash-evidence.ts EventsRead).
 *
 * Decide, at the look:
 *   1. evidence.ts     what keeper has of it: the look now, the inspect, keeper's stored view, what was counted before
 *   2. shown.ts        how many deaths the look shows: RestartCount's delta, a container down now or gone, one
 *                      turned unhealthy; at keeper's first look, its baseline
 * then with the tick's events (a death whose decision needs events the read did not cover is held, not decided:
 * crash-evidence.ts settleCrashes; the container's own count and times decide the rest):
 *   3. counted.ts      which deaths count, and which die event is whose; at a first look, those after the baseline
 *   4. facts.ts        each death's facts: exit code, OOM kill, the engine's error, its run's log window
 *   5. engine-stop.ts  a death the engine itself caused is held, not counted, for the grace
 *   6. dating.ts       each death's time: its own, or spread over what keeper did not see as Docker's backoff lays it
 *   7. words.ts        the crash in words: ah's reason
 * In recordCrash's transaction (src/db/services.ts), with the service row's own counters:
 *   8. decision.ts     expected exits, the window and threshold at each death's time, the circuit's opening
 * After it, late-oom.ts: a later `oom` event corrects a death recorded as a SIGKILL.
 *
 * Apply (src/host/reconcile/apply.ts): recordCrash writes the decision in one compare-and-set transaction on the
 * snapshot the evidence was gathered from; a snapshot that moved meanwhile counts nothing, and the next tick gathers
 * again.
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
