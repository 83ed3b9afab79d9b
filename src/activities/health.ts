/** The host health workflow's activities: this host's engine and DB, read through the worker. */
import type { HostDeps } from '../host/deps';
import { readEngineReport, readSchema } from '../host/health';
import type { EngineReport } from '../contracts/health';

export function createHealthActivities(deps: HostDeps) {
  return {
    async readEngineInfo(): Promise<EngineReport> {
      return readEngineReport(deps);
    },

    async readSchemaVersion(): Promise<{ ah: string; keeper: number }> {
      return readSchema(deps);
    },
  };
}

/** What the workflows proxy (`proxyActivities<HealthActivities>`): the types only. */
export type HealthActivities = ReturnType<typeof createHealthActivities>;
