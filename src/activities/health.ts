/** Activities of the host health check: the smallest proof that the worker reaches this host's engine and DB. */
import { schemaVersion } from '../db/open';
import { DockerError } from '../docker/client';
import type { ActivityDeps } from './deps';

export type EngineReport =
  | { reachable: true; serverVersion: string; apiVersion: string; dockerRootDir: string; containersRunning: number }
  | { reachable: false; error: string };

export function createHealthActivities({ db, docker }: ActivityDeps) {
  return {
    async readEngineInfo(): Promise<EngineReport> {
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
    },

    async readSchemaVersion(): Promise<{ ah: string; keeper: number }> {
      return schemaVersion(db);
    },
  };
}
