/**
 * A setup file of the parallel group (test/groups.ts): the file gets its lane's Docker engine as DOCKER_HOST before
 * it is imported, so that everything it makes without naming an engine (DockerClient(), EngineFixture, the docker
 * CLI, a keeper child process) is on the lane's engine, which no file of another lane touches.
 */
import { beforeAll } from 'vitest';
import { laneEngine, recordLaneStart } from './lanes';

const lane = Number(process.env.VITEST_POOL_ID);
if (!Number.isInteger(lane) || lane < 1)
  throw new Error(`VITEST_POOL_ID is "${process.env.VITEST_POOL_ID}": the parallel group runs in vitest's forks`);
const engine = laneEngine(lane);
process.env.DOCKER_HOST = engine.dockerHost;

beforeAll(() => recordLaneStart(engine));
