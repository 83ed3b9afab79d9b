/**
 * How `npm test` groups its files (vitest.config.mts), in one place. A test file runs in the parallel group unless
 * it is listed in SERIAL_FILES below, with the reason.
 *
 * The parallel group runs its files in LANES lanes side by side (vitest's forks; a lane runs one file at a time).
 * Each lane has a Docker engine of its own, an extra engine in a network namespace of its own that the lane's first
 * file starts (test/helpers/lane-setup.ts), and every file of the lane gets it as DOCKER_HOST: a file may sweep,
 * list or watch the whole engine, as it could when the suite ran one file at a time on the main engine. The lanes
 * share the dev server (every file uses host ids, task queues and workflow ids of its own), the Java time-skipping
 * server (one clock: files take it in turn, see timeSkippingEnv in test/helpers/temporal.ts), the host and the
 * checkout. An extra engine a file starts itself needs a base name no other file uses.
 *
 * A file goes in SERIAL_FILES only when it needs what cannot be had per file: a fixed port, the main engine, or the
 * host as a whole. The serial group runs after the parallel one, one file at a time, on the main engine.
 */

/**
 * Lanes of the parallel group: the suite mostly waits (on engines, servers, timers), so more lanes than cores. On
 * this project's 2-core machine, with other work keeping the load average near 9, 6 lanes ran the group in 418 s
 * and 4 in 487 s.
 */
export const LANES = lanes(process.env.KEEPER_TEST_LANES);

/** The files that must run alone, each with why. Paths from the repository's root. */
export const SERIAL_FILES: Record<string, string> = {
  'test/e2e/front-door.test.ts':
    "npm start on a clean clone: the embedded server's fixed ports 7233/8233 (a one-shot command elsewhere would find it and use it) and metrics on 9464, on the main engine",
  'test/e2e/worker.test.ts': "keeper worker without an address: the embedded server's fixed ports 7233/8233",
  'test/e2e/demo.test.ts': 'npm run demo: its worker runs the embedded server on the fixed port 7233, on the main engine',
  'test/gvisor/refusal.test.ts': "a development host's worker, with no address, runs the embedded server on the fixed port 7233",
  'test/host-safety.test.ts': "compares the main engine's whole container list before and after a leak of its own",
};

/**
 * Parallel files that start first, in this order (test/sequencer.ts): each waits long on one thing (a 60 s engine
 * outage, the clean clone's npm install that compiles better-sqlite3, a cluster per test, a release built from its
 * commit, npm pack, the local looks' real intervals, Docker's real restart backoff, a wedged engine's deadlines, the
 * scripted soak's steps), and a lane that took one of them last would finish long after the others. vitest orders
 * the rest by its last run.
 */
export const START_FIRST = [
  'test/reliability/dockerd-outage.test.ts',
  'test/e2e/newcomer-install.test.ts',
  'test/cluster/connect.test.ts',
  'test/upgrade/in-flight.test.ts',
  'test/install/package.test.ts',
  'test/watch/reconcile-look.test.ts',
  'test/watch/pool-look.test.ts',
  'test/reconcile/absence-rollover.test.ts',
  'test/reconcile/absence.test.ts',
  'test/watch/gc-look.test.ts',
  'test/watch/engine-wedge.test.ts',
  'test/soak/scripted.test.ts',
];

function lanes(given: string | undefined): number {
  if (given === undefined || given === '') return 6;
  const n = Number(given);
  if (!Number.isInteger(n) || n < 1 || n > 16) throw new Error(`KEEPER_TEST_LANES must be a whole number from 1 to 16, got "${given}"`);
  return n;
}
