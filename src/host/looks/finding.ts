/**
 * What a local look found for one loop: the things a run of that loop would do now. Looking is free (the engine and
 * the state DB, no Temporal call); only a look that finds something asks for a run, which acts durably.
 */
export interface Finding {
  /**
   * One item per thing to do, as `kind:subject[@version]`, e.g. `crash:svc1@rc4`. Stable while the thing is the
   * same and new when it changes, so a look can tell "still not done" from "something new".
   */
  items: string[];
  /** A run would act for a service (the first such), for the run's search attributes. */
  serviceId?: string;
  /**
   * Container changes Docker's event stream should have reported (a death), with their time: the event watcher
   * checks them against what it received, which is how a silent stream is found.
   */
  changes: ContainerChange[];
  /**
   * What the look could not see, in one line, though it saw the rest: the look counts as failing (keeper status, the
   * metrics), and what it did find is still asked for.
   */
  failed?: string;
}

export interface ContainerChange {
  /** As the service row holds it: the full id or a 12+ character prefix. */
  containerId: string;
  /** When it happened (unix ms). */
  atMs: number;
  /** The item it belongs to. */
  item: string;
}

export const NOTHING_FOUND: Finding = { items: [], changes: [] };
