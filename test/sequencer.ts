/**
 * The order in which `npm test` hands out its files: vitest's own (the files that failed or took longest in the last
 * run first, from its cache in node_modules/.vite; by size on a fresh clone, which has none), except that the files
 * test/groups.ts lists in START_FIRST come first, in that order. They wait longest on one thing each, and a lane
 * that took one of them last would finish long after the others.
 */
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { START_FIRST } from './groups';

export default class StartFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = START_FIRST.indexOf(path.relative(this.ctx.config.root, spec.moduleId));
      return at === -1 ? START_FIRST.length : at;
    };
    return sorted.sort((a, b) => rank(a) - rank(b)); // stable: the rest keep vitest's order
  }
}
