import { defineConfig } from 'vitest/config';

// `npm run test:fast`: the workflows on the time-skipping server with stub activities, replay of the recorded
// histories, the pure tests, and host/'s rules on an in-memory engine (test/host/, a SQLite file each); no Docker,
// no dev server. Forked processes: Temporal's native bridge must not run in worker threads.
// Two groups side by side, each one file at a time in one process: the workflows (time skipping is one clock for
// the whole server, so never two of them at once) and the rest, which need no server at all.
const common = {
  pool: 'forks',
  // One process for a group's files: none of them keeps state in a module, the environment, a module mock or fake
  // timers, and a fresh fork per file costs more than most files' tests.
  isolate: false,
  maxWorkers: 1,
  testTimeout: 30_000,
  hookTimeout: 60_000,
  setupFiles: ['test/helpers/remove-temp-dirs.ts'],
} as const;

export default defineConfig({
  test: {
    // One process per group, the two at once.
    maxWorkers: 2,
    globalSetup: ['test/global-setup-fast.ts'],
    reporters: ['default', './test/reporters/slowest-files.ts'],
    projects: [
      { test: { ...common, name: 'workflows', include: ['test/workflows/**/*.test.ts'] } },
      {
        test: {
          ...common,
          name: 'rules',
          // The pure tests: they read files and call functions. Not cli tests (they run the built bin, and most open
          // a state DB), nor anything that needs a dev server or an engine.
          include: [
            'test/policy/**/*.test.ts',
            // host/'s rules against the in-memory engine (a test double) and a real SQLite file: no engine.
            'test/host/**/*.test.ts',
            // the Engine contract against the in-memory engine (its real-engine run, test/engine/real.test.ts, is the integration tier's).
            'test/engine/memory.test.ts',
            'test/watch/event-watcher-rules.test.ts',
            'test/settings.test.ts',
            'test/compose.test.ts',
            'test/readme.test.ts',
            // bench:looks' round arithmetic.
            'test/bench/look-rounds.test.ts',
            // the soak's ledger rules and its flags: pure, on made-up event sequences (npm run soak is a bench).
            'test/soak/**/*.test.ts',
            // package.json declares every imported package where it belongs (reads the sources, and `npm ls`).
            'test/dependencies.test.ts',
            // every workflow type, activity, export, metric and path the docs cite exists.
            'test/docs-names.test.ts',
          ],
        },
      },
    ],
  },
});
