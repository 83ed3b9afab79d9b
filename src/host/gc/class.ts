/**
 * What a GC class is: its name, its words, its place in a sweep, whether the worker's GC look asks for a sweep for
 * it, and its host side (observe, plan through src/policy/gc.ts, remove). Each class is one file in classes/ that
 * calls `gcClass`, and one line of registry.ts; the sweep, its activities, the CLI, the metrics and the GC look
 * all take the classes from there. A class added needs no workflow change and no patch: a sweep runs the list its
 * local activity recorded, so a replay sees the classes its run saw (src/workflows/gcSweep.ts).
 *
 * An engine or DB error while observing skips the class (or, where a class observes resource by resource, that
 * resource); it never makes anything an orphan.
 */
import type { ContainerUsage } from '../../docker/engine';
import type { AgeGuard, Plan } from '../../policy/gc';
import { unixSeconds } from '../../time';
import type { HostDeps } from '../deps';
import type { EngineView } from '../../watch/engine-view';
import { carryOut, observed } from './sweep';
import type { GcClassInput, GcClassResult, GcFailure } from '../../contracts/gc';

export type GcDeps = Pick<HostDeps, 'db' | 'docker' | 'settings' | 'log' | 'clock'> & {
  /**
   * The engine's containers, labels included, as every class of this sweep reads them (viewOf): the GC look shares
   * its round's view; a sweep's activity, given none, lists for each class.
   */
  view?: EngineView;
};

/** What a class observed may list, as `skipped`, the resources it could not read (an engine or DB error on that one). */
export interface Observed {
  skipped?: GcFailure[];
}

export interface GcClassDefinition<N extends string, Seen extends object, Target> {
  /** The name the sweep's result, the CLI, the logs and `keeper_gc_removals_total{class}` show. */
  name: N;
  /** What it removes, in an operator's words: `keeper gc --help` joins them. docs/how-it-works.md describes each. */
  words: string;
  /**
   * Runs before the other classes, which then see what it removed (in a dry run, would remove) as gone. Only the
   * containers class: removing a container frees the volumes, networks and images it held.
   */
  runsFirst?: boolean;
  /**
   * Whether the worker's GC look (every --gc-look-interval) requests a sweep when this class finds something.
   * A class that only trims keeper's own rows is left to the sweeps the schedule makes: a few rows are no reason
   * for a run of their own.
   */
  lookRequests: boolean;
  observe(deps: GcDeps, input: GcClassInput): Promise<Seen> | Seen;
  plan(seen: Seen, deps: GcDeps, input: GcClassInput): Plan<Target>;
  /** Removes one planned target; one already gone is no failure. `seen` is what the plan was made from. */
  remove(target: Target, deps: GcDeps, seen: Seen): Promise<void> | void;
}

/** One entry of the registry: what a sweep needs to know of a class, and its run. */
export interface GcClassEntry<N extends string = string> {
  name: N;
  words: string;
  runsFirst: boolean;
  lookRequests: boolean;
  /** Observes, plans and removes (or, dry, plans only); never throws for what it observed. */
  run(deps: GcDeps, input: GcClassInput): Promise<GcClassResult>;
}

export function gcClass<const N extends string, Seen extends object, Target>(def: GcClassDefinition<N, Seen, Target>): GcClassEntry<N> {
  return {
    name: def.name,
    words: def.words,
    runsFirst: def.runsFirst ?? false,
    lookRequests: def.lookRequests,
    async run(deps, input) {
      const o = await observed(deps.log, def.name, input.dryRun, () => def.observe(deps, input));
      if ('skippedAs' in o) return o.skippedAs;
      const plan = def.plan(o.seen, deps, input);
      return carryOut(deps.log, def.name, input.dryRun, plan, (o.seen as Observed).skipped ?? [], (t) => def.remove(t, deps, o.seen));
    },
  };
}

/** The age guard (--gc-min-age) at this moment. */
export const ageGuard = ({ settings, clock }: Pick<GcDeps, 'settings' | 'clock'>): AgeGuard => ({
  now: unixSeconds(clock),
  minAgeSeconds: Math.floor(settings.gcMinAgeMs / 1000),
});

/** Containers that stay: what the containers class of this sweep did not (or, dry, would not) remove. */
export function staying(all: ContainerUsage[], input: GcClassInput): ContainerUsage[] {
  const gone = new Set(input.goneContainers ?? []);
  return all.filter((c) => !gone.has(c.id));
}
