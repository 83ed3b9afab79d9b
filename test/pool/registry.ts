/**
 * A real registry for the template-pull tests: Debian's docker-registry (scripts/provision-registry.sh) on
 * loopback, inside the network namespace of the test's own engine (scripts/extra-dockerd.sh), since that engine's
 * 127.0.0.1 is its namespace's, not the host's. Docker treats a 127.0.0.0/8 registry as insecure (plain HTTP) by
 * default, so the engine needs no configuration, and the host's network is never touched. Each registry has a temp
 * storage dir and config file of its own; stop() ends the process and removes them.
 */
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ExtraEngine } from '../helpers/engines';
import { tempDir, waitFor } from '../helpers/fixtures';

export interface LoopbackRegistry {
  /** `127.0.0.1:PORT`, as image references name it. */
  address: string;
  stop(): Promise<void>;
}

function registryConfig(dir: string, port: number, auth: boolean): string {
  const lines = [
    // Log level info: the registry says when it listens.
    'version: 0.1',
    'log:',
    '  level: info',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${path.join(dir, 'storage')}`,
    'http:',
    `  addr: 127.0.0.1:${port}`,
  ];
  // An htpasswd file with no users: every request needs credentials, and none are valid (a private registry).
  if (auth) lines.push('auth:', '  htpasswd:', '    realm: keeper-test', `    path: ${path.join(dir, 'htpasswd')}`);
  return `${lines.join('\n')}\n`;
}

/** Starts a registry on a free loopback port of `engine`'s namespace; with `auth`, one that refuses every pull. */
export async function startRegistry(engine: ExtraEngine, opts: { auth?: boolean } = {}): Promise<LoopbackRegistry> {
  try {
    execFileSync('sh', ['-c', 'command -v docker-registry']);
  } catch {
    throw new Error('docker-registry is not installed: run scripts/provision-registry.sh');
  }
  const dir = tempDir('keeper-registry-');
  fs.writeFileSync(path.join(dir, 'htpasswd'), '');
  for (let attempt = 1; ; attempt++) {
    const port = 20_000 + crypto.randomInt(30_000); // the namespace is the engine's alone: a clash is only a retry
    const config = path.join(dir, 'config.yml');
    fs.writeFileSync(config, registryConfig(dir, port, !!opts.auth));
    const child = spawn('nsenter', [`--net=/run/netns/keeper-${engine.name}`, 'docker-registry', 'serve', config], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    let exited = false;
    const done = new Promise<void>((resolve) => child.once('exit', () => ((exited = true), resolve())));
    const listening = `listening on 127.0.0.1:${port}`;
    await waitFor(`docker-registry to listen on port ${port}`, () => exited || output.includes(listening), 30_000).catch((err) => {
      child.kill('SIGKILL');
      throw err;
    });
    if (!exited) {
      const stop = async () => {
        if (!exited) child.kill('SIGTERM');
        await done;
        fs.rmSync(dir, { recursive: true, force: true });
      };
      return { address: `127.0.0.1:${port}`, stop };
    }
    if (attempt === 5 || !output.includes('address already in use')) {
      fs.rmSync(dir, { recursive: true, force: true });
      throw new Error(`docker-registry did not start: ${output.trim().split('\n').slice(-3).join(' | ')}`);
    }
  }
}
