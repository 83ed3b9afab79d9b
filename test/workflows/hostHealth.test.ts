/** hostHealth with stub activities on the time-skipping server: the task queue it ran on, the engine report, the schema. */
import { describe, expect, it, vi } from 'vitest';
import type { Activities } from '../../src/loops/registry';
import type { EngineReport } from '../../src/contracts/health';
import { hostHealth } from '../../src/workflows';
import { executeWithStubs, stubWorkerEnvForFile, withStubWorker } from './helpers';

const env = stubWorkerEnvForFile();
const SCHEMA = { ah: 'state_019_env_previews.sql', keeper: 3 };

function healthStubs(engine: EngineReport) {
  return {
    readEngineInfo: vi.fn<Activities['readEngineInfo']>(async () => engine),
    readSchemaVersion: vi.fn<Activities['readSchemaVersion']>(async () => SCHEMA),
  } satisfies Pick<Activities, 'readEngineInfo' | 'readSchemaVersion'>;
}

describe('hostHealth', () => {
  it('returns its task queue, a reachable engine and the schema', async () => {
    const engine: EngineReport = {
      reachable: true,
      serverVersion: '20.10.24',
      apiVersion: '1.41',
      dockerRootDir: '/var/lib/docker',
      containersRunning: 7,
    };
    const { result, taskQueue } = await withStubWorker(env, healthStubs(engine), async (taskQueue) => ({
      result: await env.client.workflow.execute(hostHealth, { taskQueue, workflowId: `health-${taskQueue}` }),
      taskQueue,
    }));
    expect(result).toEqual({ taskQueue, engine, schema: SCHEMA });
  });

  it('reports an unreachable engine as such, with the schema still read', async () => {
    const engine: EngineReport = { reachable: false, error: 'docker info: connect ENOENT /var/run/docker.sock' };
    const stubs = healthStubs(engine);
    const { result } = await executeWithStubs(env, stubs, hostHealth);
    expect(result).toMatchObject({ engine, schema: SCHEMA });
    expect(stubs.readSchemaVersion).toHaveBeenCalledTimes(1);
  });
});
