/**
 * A setup file of both vitest configs: after each test file (its own after-hooks run first), the temp dirs it made
 * with tempDir() are removed, so that runs of the suite do not fill /tmp.
 */
import { afterAll } from 'vitest';
import { removeTempDirs } from './fixtures';

afterAll(() => removeTempDirs());
