import { defineConfig } from 'vitest/config';

// Temporal's native bridge must not run in worker threads, and the suite shares one Docker engine and one
// pair of Temporal servers, so test files run one at a time in forked processes.
export default defineConfig({
  test: {
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    teardownTimeout: 30_000,
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/helpers/remove-temp-dirs.ts'],
    include: ['test/**/*.test.ts'],
    reporters: ['default', './test/reporters/slowest-files.ts'],
  },
});
