/** The smallest proof that a worker reaches this host's engine and DB: the engine's identity and the schema. */
import { schemaVersion } from '../db/open';
import { DockerError } from '../docker/errors';
import type { HostDeps } from './deps';
import type { EngineReport } from '../contracts/health';

export async function readEngineReport({ docker }: Pick<HostDeps, 'docker'>): Promise<EngineReport> {
  try {
    const info = await docker.info();
    return {
      reachable: true,
      serverVersion: info.serverVersion,
      apiVersion: info.apiVersion,
      dockerRootDir: info.dockerRootDir,
      containersRunning: info.containersRunning,
    };
  } catch (err) {
    if (err instanceof DockerError) return { reachable: false, error: err.message };
    throw err;
  }
}

export function readSchema({ db }: Pick<HostDeps, 'db'>): { ah: string; keeper: number } {
  return schemaVersion(db);
}
