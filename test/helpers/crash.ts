/** Crashing a container the way a segfault or the OOM killer would. No vitest imports: benchmarks use it too. */
import type { DockerClient } from '../../src/docker/client';

/**
 * SIGKILLs the container's main process from the host. Unlike `docker kill`, which Docker treats as a manual
 * stop, this leaves the restart policy in force, so `unless-stopped` brings the container back. Needs root.
 */
export async function crashContainer(docker: DockerClient, cid: string): Promise<void> {
  const { pid, status } = await docker.inspectContainer(cid);
  if (status !== 'running' || pid <= 0) throw new Error(`container ${cid.slice(0, 12)} is ${status}: nothing to crash`);
  process.kill(pid, 'SIGKILL');
}
