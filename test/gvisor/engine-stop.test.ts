/**
 * Host safety with gVisor: a runsc start that fails leaves runsc's gofer and sandbox processes behind (seen on
 * these machines), and stopping the test engine (scripts/extra-dockerd.sh stop, which kills every process whose
 * command line names the engine's run directory) must kill them too. On an engine of this file's own.
 */
import { expect, it } from 'vitest';
import { DockerClient } from '../../src/docker/client';
import { TEST_IMAGE, uniqueId, waitFor } from '../helpers/fixtures';
import { gvisorEngine, processesUnder } from './helpers';

it('a runsc start that fails here leaves runsc-gofer and runsc-sandbox; stopping the engine leaves none of its processes', async () => {
  const engine = gvisorEngine('gvisor-stop');
  const runDir = `/run/keeper-dockerd-${engine.name}/`;
  try {
    const docker = new DockerClient(engine.dockerHost);
    // runsc-net has networking, which runsc refuses in these machines' root network namespace.
    const id = await docker.createContainer({
      name: uniqueId('gv-net-'),
      image: TEST_IMAGE,
      cmd: ['sleep', '60'],
      confined: { readonlyRootfs: false, runtime: 'runsc-net' },
    });
    await expect(docker.startContainer(id)).rejects.toThrow(/cannot run with network enabled in root network namespace/);
    const left = await waitFor(
      'the failed start to leave runsc processes',
      () => {
        const programs = processesUnder(runDir).map((p) => p.program);
        return programs.includes('runsc-gofer') && programs.includes('runsc-sandbox') ? programs : undefined;
      },
      10_000,
    );
    console.log(
      `left by the failed start: ${left
        .filter((p) => p.startsWith('runsc'))
        .sort()
        .join(', ')}`,
    );
  } finally {
    engine.stop();
  }
  expect(processesUnder(runDir)).toEqual([]);
});
