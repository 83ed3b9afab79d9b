/** What crosses the hostHealth workflow's boundary: this host's engine and schema, read through its worker. Types only. */

export type EngineReport =
  | { reachable: true; serverVersion: string; apiVersion: string; dockerRootDir: string; containersRunning: number }
  | { reachable: false; error: string };

export interface SchemaVersions {
  ah: string;
  keeper: number;
}

export interface HostHealth {
  taskQueue: string;
  engine: EngineReport;
  schema: SchemaVersions;
}
