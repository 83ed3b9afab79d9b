/**
 * What a loop's look found: the things a run of that loop would do now. Looking is free (the engine and the state
 * DB, no Temporal call); only a look that finds something requests a run, which acts durably.
 */
export interface Finding {
  /** One per thing to do, each with what the look runner needs to know of it (src/watch/look-runner.ts). */
  items: FoundItem[];
  /** A run would act for a service (the first such), for the run's search attributes. */
  serviceId?: string;
  /**
   * What the look could not see, in one line, though it saw the rest: the look counts as failing (keeper status, the
   * metrics), and what it did find is still requested.
   */
  failed?: string;
}

export interface FoundItem {
  /**
   * `kind:subject[@version]`, e.g. `crash:svc1@rc4`. Stable while the thing is the same and new when it changes, so a
   * look can tell "still not done" from "something new".
   */
  key: string;
  /**
   * A container change Docker's event stream should have reported (a death), with its time: the event watcher
   * checks it against what it heard, which is how the event path covers it, and how a silent stream is found.
   */
  change?: ContainerChange;
  /**
   * The event watcher's request after a container start covers it while one is pending (a service coming back up:
   * the watcher requests a tick once the container has run long enough to count as up).
   */
  coveredByStartRequest?: boolean;
}

export interface ContainerChange {
  /** As the service row holds it: the full id or a 12+ character prefix. */
  containerId: string;
  /** When it happened (unix ms). */
  atMs: number;
}

export const NOTHING_FOUND: Finding = { items: [] };

/** Items of nothing but their keys (a look whose items the event path cannot cover). */
export const itemsOf = (keys: string[]): FoundItem[] => keys.map((key) => ({ key }));

/** The keys of a finding's items. */
export const keysOf = (finding: Finding): string[] => finding.items.map((i) => i.key);
