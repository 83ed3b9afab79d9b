/** What one reconcile tick saw: the observe step's result, which the apply step acts on. */
import type { CrashRecord } from '../../db/services';
import type { ContainerLook } from '../../policy/crash';

export interface Problem {
  subject: string; // e.g. service:<id>, container:<id12>
  problem: string;
}

export interface SplitBrain {
  containerId: string;
  serviceId: string;
  dbContainerId: string;
}

export interface TickObservation {
  /** Unix seconds of the observation. */
  now: number;
  dockerError?: string; // set when the engine did not answer the lists: no Docker step runs
  checked: number;
  inspected: number;
  transientErrors: number;
  transientSamples: string[]; // the first few, for the log
  crashes: (CrashRecord & { restart: boolean })[];
  looks: { serviceId: string; expected: ContainerLook | null; next: ContainerLook }[];
  unchanged: number; // containers confirmed unchanged since keeper's last look
  /** Deaths the engine itself caused (its own stop), held while it may start the containers again. */
  engineStopsHeld?: number;
  backUp: { serviceId: string; containerId: string }[];
  gone: { serviceId: string; containerId: string }[];
  /** In-flight rows (created, restarting) whose container is gone (404): their outcome (policy/rows.ts). Absent from observations made before it. */
  vanished?: { serviceId: string; containerId: string; fromStatus: string; status: 'stopped'; reason: string }[];
  databases: { id: string; from: string; to: string }[];
  environmentsDown: { id: string; reason: string }[];
  environmentStops: { id: string; containerId: string }[];
  splitBrain: SplitBrain[];
  problems: Problem[];
  /** Services whose crash policy labels this tick read (from the list or an inspect), and the bad ones' lines. */
  labelsChecked?: string[];
  labelProblems?: { serviceId: string; problems: string[] }[];
}

export function emptyObservation(now: number): TickObservation {
  return {
    now, checked: 0, inspected: 0, transientErrors: 0, transientSamples: [], crashes: [], looks: [], unchanged: 0, backUp: [],
    gone: [], vanished: [], databases: [], environmentsDown: [], environmentStops: [], splitBrain: [], problems: [],
  };
}
