/**
 * docker-compose.temporal.yml cannot run here (no image registry is reachable), so this parses it and
 * checks what an operator relies on: the services, their images, ports and start order.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

type Service = {
  image: string;
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
  environment?: Record<string, string>;
  command?: string[];
  healthcheck?: unknown;
};
const file = fs.readFileSync(path.join(__dirname, '..', 'docker-compose.temporal.yml'), 'utf8');
const compose = parse(file, { merge: true }) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const s = compose.services;

describe('docker-compose.temporal.yml', () => {
  it('has PostgreSQL, schema setup, the server, admin tools and the UI', () => {
    expect(Object.keys(s).sort()).toEqual(['postgresql', 'temporal', 'temporal-admin-tools', 'temporal-schema-setup', 'temporal-ui']);
  });

  it('uses current images, not the deprecated auto-setup', () => {
    for (const svc of Object.values(s)) expect(svc.image).not.toContain('auto-setup');
    expect(s.temporal.image).toMatch(/^temporalio\/server:\d+\.\d+\.\d+$/);
    expect(s['temporal-ui'].image).toMatch(/^temporalio\/ui:\d+\.\d+\.\d+$/);
    expect(s['temporal-admin-tools'].image).toMatch(/^temporalio\/admin-tools:/);
    expect(s.postgresql.image).toMatch(/^postgres:\d+$/);
  });

  it('publishes the frontend on 7233 and the UI on 8080', () => {
    expect(s.temporal.ports).toContain('7233:7233');
    expect(s['temporal-ui'].ports).toContain('8080:8080');
  });

  it('starts each part only once what it needs is ready', () => {
    expect(s['temporal-schema-setup'].depends_on).toEqual({ postgresql: { condition: 'service_healthy' } });
    expect(s.temporal.depends_on).toEqual({ 'temporal-schema-setup': { condition: 'service_completed_successfully' } });
    expect(s['temporal-admin-tools'].depends_on).toEqual({ temporal: { condition: 'service_healthy' } });
    expect(s['temporal-ui'].depends_on).toEqual({ temporal: { condition: 'service_healthy' } });
    expect(s.postgresql.healthcheck).toBeDefined();
    expect(s.temporal.healthcheck).toBeDefined();
  });

  it("points the server at PostgreSQL and creates keeper's search attributes", () => {
    expect(s.temporal.environment).toMatchObject({ DB: 'postgres12', POSTGRES_SEEDS: 'postgresql' });
    const setup = (s['temporal-admin-tools'].command ?? []).join('\n');
    expect(setup).toContain('KeeperHost ServiceId');
    expect(setup).toContain('--type Keyword');
    expect(compose.volumes).toHaveProperty('temporal-postgres');
  });
});
