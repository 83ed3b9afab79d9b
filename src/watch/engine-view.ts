/**
 * One view of the engine's containers, labels included, shared by every loop that reads the engine at the same
 * moment: the reconcile observation, the pool's look and every GC class. It is one list call (every container, in
 * any state, with its labels, status, image, networks and volumes), made on the first read and then filtered
 * locally, so a round of local looks lists the engine once whichever loops look in it, and a label that a loop
 * reads (a service's crash policy today; a pool or GC label tomorrow) is read from the same list as every other
 * loop's. A view is a moment: make a new one for the next round (src/watch/look-runner.ts) or the next tick.
 */
import type { ContainerUsage, Engine, LabelFilter } from '../docker/engine';

export class EngineView {
  private listed?: Promise<ContainerUsage[]>;

  constructor(private readonly docker: Pick<Engine, 'listContainerUsage'>) {}

  /** Every container of the engine, listed on the first call; a failed list fails every reader of this view. */
  containers(): Promise<ContainerUsage[]> {
    this.listed ??= this.docker.listContainerUsage();
    return this.listed;
  }

  /** The containers the engine's own label filter would list. */
  async labelled(filter: LabelFilter): Promise<ContainerUsage[]> {
    return (await this.containers()).filter((c) => matchesLabelFilter(c.labels, filter));
  }
}

/** Docker's label filter, locally: every key present, and equal to its value where one is given (`true`: any). */
export function matchesLabelFilter(labels: Record<string, string>, filter: LabelFilter): boolean {
  return Object.entries(filter).every(([key, value]) => labels[key] !== undefined && (value === true || labels[key] === value));
}

/** The view a read shares, or a view of its own when it was given none (a tick's activity, a CLI command). */
export const viewOf = (deps: { docker: Pick<Engine, 'listContainerUsage'>; view?: EngineView }): EngineView =>
  deps.view ?? new EngineView(deps.docker);
