/**
 * What a soak run started, stopped in reverse order at its end: also when it fails, and on Ctrl-C (SIGINT) or
 * SIGTERM. Every step is tried even when an earlier one throws; the errors are reported, not swallowed.
 */
export class Cleanup {
  private readonly steps: { what: string; run: () => Promise<void> | void }[] = [];
  private done: Promise<string[]> | undefined;

  /** Registers how to stop something just started; steps run last registered first. */
  add(what: string, run: () => Promise<void> | void): void {
    this.steps.push({ what, run });
  }

  /** Runs every step once (a second call waits for the first); resolves to the failures, one line each. */
  run(): Promise<string[]> {
    this.done ??= (async () => {
      const failures: string[] = [];
      for (const step of this.steps.splice(0).reverse()) {
        try {
          await step.run();
        } catch (err) {
          failures.push(`${step.what}: ${(err as Error).message.split('\n')[0]}`);
        }
      }
      return failures;
    })();
    return this.done;
  }
}

/**
 * Calls `onSignal` at the first SIGINT or SIGTERM (the run then stops and cleans up); a second one is left to
 * Node's default (the process ends at once). Returns how to stop listening.
 */
export function onInterrupt(onSignal: (signal: NodeJS.Signals) => void): () => void {
  const handler = (signal: NodeJS.Signals) => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
    onSignal(signal);
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}
