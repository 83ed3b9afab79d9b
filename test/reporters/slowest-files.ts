/**
 * A vitest reporter that prints, when a run ends, the test files that took longest: each file's wall time from
 * the moment its fork began it to its end (imports, hooks, the servers and engines it starts, its tests), and its
 * project. With the suite's files running side by side, this is what a file adds to the run when it is the last
 * to finish; the tests' own times, which vitest prints, leave out the hooks. With KEEPER_TEST_TIMINGS=FILE it
 * also writes every file's times there as JSON, for comparing runs.
 */
import fs from 'node:fs';
import type { Reporter, TestModule, Vitest } from 'vitest/node';

const SHOWN = 10;

interface FileTime {
  file: string;
  project: string;
  /** When the file began, from the start of the run. */
  startMs: number;
  wallMs: number;
  /** vitest's own accounting: tests and hooks, and the import of the file. */
  testsAndHooksMs: number;
  importMs: number;
  state: string;
}

export default class SlowestFiles implements Reporter {
  private root = process.cwd();
  private runStartMs = Date.now();
  private readonly began = new Map<string, number>();
  private readonly times: FileTime[] = [];

  onInit(vitest: Vitest): void {
    this.root = vitest.config.root;
  }

  onTestRunStart(): void {
    this.runStartMs = Date.now();
  }

  onTestModuleQueued(module: TestModule): void {
    this.began.set(module.moduleId, Date.now());
  }

  onTestModuleEnd(module: TestModule): void {
    const d = module.diagnostic();
    const began = this.began.get(module.moduleId) ?? Date.now() - d.duration;
    this.times.push({
      file: module.moduleId.startsWith(this.root) ? module.moduleId.slice(this.root.length + 1) : module.moduleId,
      project: module.project.name,
      startMs: began - this.runStartMs,
      wallMs: Date.now() - began,
      testsAndHooksMs: Math.round(d.duration),
      importMs: Math.round(d.collectDuration),
      state: module.state(),
    });
  }

  onTestRunEnd(): void {
    if (this.times.length === 0) return;
    const slowest = [...this.times].sort((a, b) => b.wallMs - a.wallMs).slice(0, SHOWN);
    const width = Math.max(...slowest.map((t) => t.file.length));
    const lines = slowest.map((t) =>
      `  ${(t.wallMs / 1000).toFixed(1).padStart(6)} s  ${t.file.padEnd(width)}  ${t.project}${t.state === 'passed' ? '' : ` (${t.state})`}`.trimEnd(),
    );
    process.stdout.write(
      `\nSlowest ${slowest.length} of ${this.times.length} test files (wall time, hooks included):\n${lines.join('\n')}\n`,
    );
    const out = process.env.KEEPER_TEST_TIMINGS;
    if (out) fs.writeFileSync(out, JSON.stringify(this.times, null, 2));
  }
}
