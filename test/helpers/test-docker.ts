/**
 * keeper's Docker adapter plus what only tests need of an engine (inspect a volume, tag an image, kill a
 * container through the API, read a bounded range of events): keeper itself never does these, so they are not in
 * src/docker/client.ts. Errors are classified as keeper's are (DockerError, by HTTP status). No vitest imports.
 */
import Dockerode from 'dockerode';
import { DockerClient, dockerOptions, toDockerError } from '../../src/docker/client';

export class TestDockerClient extends DockerClient {
  private readonly raw: Dockerode;

  constructor(dockerHost: string | undefined = process.env.DOCKER_HOST) {
    super(dockerHost);
    this.raw = new Dockerode(dockerOptions(dockerHost));
  }

  private async classified<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw toDockerError(operation, err);
    }
  }

  async inspectVolume(name: string): Promise<{ name: string; labels: Record<string, string> }> {
    const v = await this.classified('volume.inspect', () => this.raw.getVolume(name).inspect());
    return { name: v.Name, labels: v.Labels ?? {} };
  }

  async tagImage(source: string, repo: string, tag: string): Promise<void> {
    await this.classified('image.tag', () => this.raw.getImage(source).tag({ repo, tag }));
  }

  /** `docker kill`: Docker treats it as a manual stop (crashContainer in crash.ts is the kernel's kill). */
  async killContainer(id: string, signal = 'SIGKILL'): Promise<void> {
    await this.classified('container.kill', () => this.raw.getContainer(id).kill({ signal }));
  }
}
