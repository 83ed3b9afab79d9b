import { defineConfig } from 'vitest/config';
import { LANES, SERIAL_FILES } from './test/groups';
import StartFirst from './test/sequencer';

// Temporal's native bridge must not run in worker threads: forked processes, a fresh one per file.
const common = {
  pool: 'forks',
  testTimeout: 60_000,
  hookTimeout: 180_000,
  teardownTimeout: 30_000,
} as const;

// Two groups (test/groups.ts says which file goes where, and why; docs/development.md explains the lanes): the
// parallel one first, LANES files at a time, each lane on a Docker engine of its own; then the serial one, one file
// at a time on the main engine. Global setup (the dev server, the time-skipping server, the host-safety check) is
// the root's: it runs once for both.
export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    sequence: { sequencer: StartFirst },
    reporters: ['default', './test/reporters/slowest-files.ts'],
    projects: [
      {
        test: {
          ...common,
          name: 'parallel',
          include: ['test/**/*.test.ts'],
          exclude: Object.keys(SERIAL_FILES),
          maxWorkers: LANES,
          setupFiles: ['test/helpers/remove-temp-dirs.ts', 'test/helpers/lane-setup.ts'],
        },
      },
      {
        test: {
          ...common,
          name: 'serial',
          include: Object.keys(SERIAL_FILES),
          maxWorkers: 1,
          setupFiles: ['test/helpers/remove-temp-dirs.ts'],
        },
      },
    ],
  },
});
