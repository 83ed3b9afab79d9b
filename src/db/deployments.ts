/** Deployment rows written the way ah's reconciler writes them: 32-char hex id, container_id '', build_id NULL. */
import crypto from 'node:crypto';
import type { StateDb } from './open';

export type DeploymentStatus = 'crashed' | 'failed' | 'stopped' | 'running';
/** ah's triggers: the reconciler's, and `manual`/`restart` for operator commands. */
export type DeploymentTrigger = 'reconciler' | 'auto_recovery' | 'manual_reset' | 'manual' | 'restart';

export interface DeploymentRow {
  serviceId: string;
  tenantId: string;
  image: string | null;
  status: DeploymentStatus;
  trigger: DeploymentTrigger;
  error?: string;
  at: number; // unix seconds
}

export function recordDeployment(db: StateDb, d: DeploymentRow): void {
  db.prepare(
    `INSERT INTO deployments (id, service_id, tenant_id, build_id, image, status, trigger, container_id, error_message,
       started_at, completed_at, cancelled_at, created_at)
     VALUES (?, ?, ?, NULL, ?, ?, ?, '', ?, ?, ?, NULL, ?)`,
  ).run(
    crypto.randomBytes(16).toString('hex'),
    d.serviceId,
    d.tenantId,
    d.image ?? '',
    d.status,
    d.trigger,
    d.error ?? '',
    d.at,
    d.at,
    d.at,
  );
}
