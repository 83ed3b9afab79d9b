import { defineConfig } from 'vitest/config';

// `npm run test:fast`: the workflows on the time-skipping server with stub activities, replay of the recorded
// histories, the pure tests, and host/'s rules on an in-memory engine (test/host/, a SQLite file each); no Docker,
// no dev server. Forked processes, one file at a time:
// Temporal's native bridge must not run in worker threads, and time skipping is one clock for the whole server.
export default defineConfig({
  test: {
    pool: 'forks',
    fileParallelism: false,
    // One process for all files (5 s of the ~15 s): none of them keeps state in a module, the environment, a
    // module mock or fake timers, and a fresh fork per file costs more than most files' tests.
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    globalSetup: ['test/global-setup-fast.ts'],
    setupFiles: ['test/helpers/remove-temp-dirs.ts'],
    // The pure tests: they read files and call functions. Not cli tests (they run the built bin, and most open a
    // state DB), nor anything that needs a dev server or an engine.
    include: [
      'test/workflows/**/*.test.ts',
      'test/policy/**/*.test.ts',
      // host/'s rules against the in-memory engine (a test double) and a real SQLite file: no engine.
      'test/host/**/*.test.ts',
      // the Engine contract against the in-memory engine (its real-engine run, test/engine/real.test.ts, is the integration tier's).
      'test/engine/memory.test.ts',
      'test/events/watcher-rules.test.ts',
      'test/settings.test.ts',
      'test/compose.test.ts',
      'test/readme.test.ts',
      // package.json declares every imported package where it belongs (reads the sources, and `npm ls`).
      'test/dependencies.test.ts',
      // every workflow type, activity, export, metric and path the docs cite exists.
      'test/docs-names.test.ts',
    ],
    reporters: ['default', './test/reporters/slowest-files.ts'],
  },
});
