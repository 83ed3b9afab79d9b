/**
 * The container of an environment, warm or cold, as ah runs it: the template's image idling in /workspace on a
 * volume, with the template's memory and CPU, confined like every tenant container and under the tenant
 * runtime (--tenant-runtime), restarted unless stopped.
 */
import type { TemplateRow } from '../db/pool';
import type { ContainerSpec } from '../docker/engine';
import { LABEL, RESOURCE_TYPE, MANAGED } from '../names';

/** busybox and coreutils both accept `sleep infinity` (checked against the test image). */
export const IDLE_CMD = ['sleep', 'infinity'];

export function environmentSpec(
  template: TemplateRow,
  x: { name: string; network: string; volume: string; labels: Record<string, string>; runtime: string },
): ContainerSpec {
  return {
    name: x.name,
    image: template.baseImage,
    cmd: IDLE_CMD,
    labels: x.labels,
    restartPolicy: 'unless-stopped',
    network: x.network,
    volumes: [{ name: x.volume, target: '/workspace' }],
    memoryBytes: template.memoryMb * 1024 * 1024,
    nanoCpus: template.cpuMillicores * 1e6,
    init: true,
    workingDir: '/workspace',
    confined: { readonlyRootfs: false, runtime: x.runtime },
  };
}

/** Labels of a pool container. ah.type stays `warm-pool`: nothing later in the chain overwrites it (W-G2). */
export function poolLabels(templateId: string, entryId: string): Record<string, string> {
  return { [LABEL.managed]: MANAGED, [LABEL.type]: RESOURCE_TYPE.warmPool, [LABEL.template]: templateId, [LABEL.poolEntry]: entryId };
}

/** Labels of an environment created cold. */
export function environmentLabels(tenantId: string, envId: string, templateId: string): Record<string, string> {
  return {
    [LABEL.managed]: MANAGED,
    [LABEL.type]: RESOURCE_TYPE.environment,
    [LABEL.tenant]: tenantId,
    [LABEL.environment]: envId,
    [LABEL.template]: templateId,
    'traefik.enable': 'false',
  };
}
