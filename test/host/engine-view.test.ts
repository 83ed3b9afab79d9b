/**
 * The engine view (src/watch/engine-view.ts) on an in-memory engine, a test double (test/helpers/memory-engine.ts)
 * whose label filter the Engine contract suite holds to a real engine's (test/engine/): the view filters as the
 * engine would, lists once however many loops read it, and a failed list fails every reader of that view only.
 */
import { describe, expect, it } from 'vitest';
import type { LabelFilter } from '../../src/docker/engine';
import { EngineView } from '../../src/watch/engine-view';
import { TEST_IMAGE } from '../helpers/fixtures';
import { memoryHost } from './world';

const FILTERS: LabelFilter[] = [
  {},
  { 'ah.service': true },
  { 'ah.type': 'warm-pool' },
  { 'ah.type': 'database' },
  { 'ah.type': true, 'ah.tenant': 't1' },
  { 'ah.absent': true },
];

describe('the engine view', () => {
  it("filters by label as the engine's own list does", async () => {
    const { engine } = memoryHost();
    engine.addImage(TEST_IMAGE);
    const made: Record<string, string>[] = [
      { 'ah.service': 's1', 'ah.tenant': 't1' },
      { 'ah.service': '', 'ah.tenant': 't2' }, // present, empty: a filter on presence still lists it
      { 'ah.type': 'warm-pool', 'ah.tenant': 'pool' },
      { 'ah.type': 'database', 'ah.tenant': 't1' },
      { other: 'x' },
    ];
    for (const [i, labels] of made.entries()) await engine.createContainer({ name: `c${i}`, image: TEST_IMAGE, labels });
    const view = new EngineView(engine);
    for (const filter of FILTERS) {
      const ids = (list: { id: string }[]) => list.map((c) => c.id).sort();
      expect(ids(await view.labelled(filter)), JSON.stringify(filter)).toEqual(ids(await engine.listContainers(filter)));
    }
  });

  it('lists the engine once, on the first read, for every loop that reads it; a new view lists again', async () => {
    const { engine } = memoryHost();
    const lists = () => engine.calls.get('container.list') ?? 0;
    const view = new EngineView(engine);
    expect(lists()).toBe(0);
    await Promise.all([view.containers(), view.labelled({ 'ah.service': true }), view.labelled({ 'ah.type': 'warm-pool' })]);
    expect(lists()).toBe(1);
    await new EngineView(engine).containers();
    expect(lists()).toBe(2);
  });

  it('fails every reader of a view whose list failed, and no later view', async () => {
    const { engine } = memoryHost();
    engine.fail('container.list', { status: 500, times: 1 });
    const view = new EngineView(engine);
    await expect(view.containers()).rejects.toThrow();
    await expect(view.labelled({ 'ah.service': true })).rejects.toThrow();
    expect(engine.calls.get('container.list')).toBe(1);
    await expect(new EngineView(engine).containers()).resolves.toEqual([]);
  });
});
