/**
 * What crosses the notifyOperators workflow's boundary: the event, the targets a workflow may carry in its
 * history (ids, never URLs), and how each delivery ended. Types only.
 */
import type { DeathSummary } from './circuit';

export type NotificationKind = 'circuit-opened' | 'circuit-closed' | 'recovery-failed';

export interface NotificationEvent {
  kind: NotificationKind;
  hostId: string;
  serviceId: string;
  /** The circuit's opening (keeper_circuit_openings): one opening, one set of events, one key each. */
  opening?: number;
  /** circuit_open_count of that opening: the escalation level that picked its backoff. */
  escalation?: number;
  /**
   * Events of runs that began before openings were numbered carry this instead (the escalation, by its old name):
   * their keys and notify workflow ids stay as they were (compatibility).
   */
  generation?: number;
  /** Unix ms at which the event happened (the workflow's time, so a replay gives the same body). */
  atMs: number;
  /** circuit-opened: when the circuit closes by itself (unix seconds), and the deaths that opened it. */
  retryAt?: number;
  deaths?: DeathSummary[];
  /** circuit-closed: by its timer or an operator's reset, and the service status recovery left. */
  closedBy?: 'timer' | 'reset';
  status?: 'running' | 'stopped';
  /** recovery-failed: why the service could not be brought back. */
  error?: string;
}

/** A target as a workflow may carry it in its history: its id and origin, never its URL. */
export interface TargetRef {
  id: string;
  shown: string;
}

export interface NotificationPlan {
  targets: TargetRef[];
  /** How long a delivery is retried before it is given up (--notify-retry-for). */
  retryForMs: number;
}

export interface Delivered {
  status: number;
  /** The attempt that got through (1 for the first), for the record. */
  attempt: number;
}

/** The end of one delivery, as the workflow saw it. */
export interface DeliveryEnd {
  target: TargetRef;
  delivered: boolean;
  attempts: number;
  error?: string;
}

export interface NotifyResult {
  key: string;
  delivered: number;
  failed: number;
  ends: DeliveryEnd[];
}
