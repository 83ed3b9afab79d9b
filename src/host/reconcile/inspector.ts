/**
 * How a tick reads the engine: the label-filtered container lists, indexed by id, and an inspect that counts
 * itself and classifies failures. Only a 404 means a container is gone; every other error is transient, so
 * the container is skipped this tick and nothing is counted for it (W-11 in docs/ah-differences.md).
 */
import type { ContainerDetails, ContainerSummary, Engine } from '../../docker/engine';
import { DockerError } from '../../docker/errors';
import type { TickObservation } from '../../contracts/reconcile';

export class Inspector {
  constructor(
    private readonly docker: Pick<Engine, 'inspectContainer'>,
    private readonly obs: TickObservation,
  ) {}

  async inspect(containerId: string, what: string): Promise<ContainerDetails | 'missing' | 'transient'> {
    this.obs.inspected++;
    try {
      return await this.docker.inspectContainer(containerId);
    } catch (err) {
      if (!(err instanceof DockerError)) throw err;
      if (err.isNotFound) return 'missing';
      this.obs.transientErrors++;
      if (this.obs.transientSamples.length < 3) this.obs.transientSamples.push(`${what}: ${err.message}`);
      return 'transient';
    }
  }
}

export interface Listed {
  all: ContainerSummary[];
  /** By full id, or by the prefix of 12+ characters that ah's rows often hold. */
  find(id: string): ContainerSummary | undefined;
}

export function indexById(list: ContainerSummary[]): Listed {
  const byId = new Map(list.map((c) => [c.id, c]));
  return {
    all: list,
    find: (id) => byId.get(id) ?? (id.length < 64 ? list.find((c) => c.id.startsWith(id)) : undefined),
  };
}
