/**
 * `keeper worker` (npm start): this host's worker, built by the Keeper (src/app/keeper.ts) and run by it until
 * SIGINT or SIGTERM (src/app/worker-run.ts). With no Temporal address configured anywhere it runs an embedded dev
 * server, persistent next to the state DB. Here: only the banner an operator reads once it runs.
 */
import { Keeper } from './app/keeper';
import type { Settings } from './settings';
import { workerBanner } from './cli/banner';

/** Runs this host until SIGINT or SIGTERM, then shuts down gracefully. */
export async function runWorkerProcess(settings: Settings): Promise<void> {
  await Keeper.with(settings, 'worker', (keeper) =>
    keeper.runWorker(async (started) => void process.stdout.write(await workerBanner(started))),
  );
}
