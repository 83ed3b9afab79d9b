/** A second, independent Docker engine for tests that need two hosts (own socket, data root and bridge). */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const SCRIPT = path.join(__dirname, '..', '..', 'scripts', 'start-extra-dockerd.sh');

/** Starts (or finds) the engine named `name` and returns its DOCKER_HOST. */
export function extraEngine(name: string): string {
  return execFileSync('bash', [SCRIPT, name], { encoding: 'utf8', timeout: 120_000 }).trim().split('\n').pop()!;
}
