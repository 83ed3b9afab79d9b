/**
 * When the engine last started. dockerd creates its default `bridge` network anew at each start (without
 * live-restore), and at that start brings back every container its policy restarts, each with RestartCount set back
 * to 0: what keeper counts from. The Engine API reports no start time of its own.
 */
import type { Engine } from '../docker/engine';
import { DockerError } from '../docker/errors';

/** Unix seconds; null when the engine has no default bridge (`--bridge none`) or cannot say now. */
export async function engineStartedAtSec(docker: Pick<Engine, 'inspectNetwork'>): Promise<number | null> {
  try {
    const bridge = await docker.inspectNetwork('bridge');
    return bridge.createdAt > 0 ? bridge.createdAt : null;
  } catch (err) {
    if (!(err instanceof DockerError)) throw err;
    return null;
  }
}
