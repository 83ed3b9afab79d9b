/**
 * The lanes of the parallel group (test/groups.ts): each lane's Docker engine is an extra engine of this run, in a
 * network namespace of its own, with the test images loaded, started by the lane's first file (lane-setup.ts) and
 * found running by the next ones. What it held once started is recorded in its run directory; global teardown
 * reports what the lane's files left on it (a container, volume or network), as it reports what the suite left on
 * the main engine, before it stops every engine of the run. No vitest imports: global setup loads this module.
 */
import fs from 'node:fs';
import path from 'node:path';
import { engineNamed, engineOwner, extraEngine, listedEngines, type ExtraEngine } from './engines';
import { captureEngineState, diffHostState, RUN_TAG_VARIABLE, type HostState } from './host-state';

type EngineState = Pick<HostState, 'containers' | 'volumes' | 'networks'>;

const LANE_BASE = 'lane';
const beforeFile = (engine: Pick<ExtraEngine, 'pidFile'>) => path.join(path.dirname(engine.pidFile), 'lane-before.json');

/** Lane `index`'s engine (1-based, vitest's VITEST_POOL_ID), started if this is the lane's first file. */
export function laneEngine(index: number): ExtraEngine {
  const started = engineNamed(`${LANE_BASE}${index}-${process.env[RUN_TAG_VARIABLE]}`);
  // An earlier file of the lane started it and recorded what it held: asking the script again costs ~1 s a file.
  if (fs.existsSync(beforeFile(started))) return started;
  return extraEngine(`${LANE_BASE}${index}`);
}

/** Records what the lane's engine holds, unless an earlier file of the lane did: that is what it held once started. */
export async function recordLaneStart(engine: ExtraEngine): Promise<void> {
  const file = beforeFile(engine);
  if (fs.existsSync(file)) return;
  fs.writeFileSync(file, JSON.stringify(await captureEngineState(engine.dockerHost)));
}

/** One line per resource the files of run `tag`'s lanes left on their engines, or removed: `lane2: containers: left behind …`. */
export async function laneLeftovers(tag: string): Promise<string[]> {
  const lanes = listedEngines()
    .filter((e) => e.owner === engineOwner(tag) && new RegExp(`^${LANE_BASE}\\d+-${tag}$`).test(e.name))
    .map((e) => engineNamed(e.name));
  const found = await Promise.all(
    lanes.map(async (lane) => {
      const label = lane.name.replace(`-${tag}`, '');
      let before: EngineState;
      try {
        before = JSON.parse(fs.readFileSync(beforeFile(lane), 'utf8')) as EngineState;
      } catch {
        return [`${label}: no record of what its engine held once started`];
      }
      const now = await captureEngineState(lane.dockerHost).catch((err: Error) => err);
      if (now instanceof Error) return [`${label}: its engine does not answer: ${now.message}`];
      return diffHostState(before, now).map((d) => `${label}: ${d}`);
    }),
  );
  return found.flat();
}
