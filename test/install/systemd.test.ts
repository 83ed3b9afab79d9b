/**
 * deploy/systemd/: the unit passes `systemd-analyze verify` (with and without its credentials drop-in) and
 * scores as well sandboxed offline; its ExecStart=, run with its env file as systemd would run it, drains and
 * exits 0 on SIGTERM, and exits non-zero on a fatal error, so that Restart=on-failure restarts what it should.
 *
 * systemd is not PID 1 here, so nothing is started through it: verify reads the files, and the test spawns the
 * ExecStart= command line itself with the environment systemd would give it (the env file, parsed). The unit
 * names keeper where `npm install -g` puts it (/usr/bin/keeper); the test's copy names the checkout's bin/keeper.js,
 * the only change, because verify checks that the binary exists. Settings that cannot hold on this machine are
 * overridden and named below: the state DB's directory, the Temporal address, the tenant runtime, the engine.
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { EXIT_USAGE } from '../../src/cli/common';
import { freePort } from '../../src/temporal/dev-server';
import { KEEPER_BIN, watchOutput } from '../helpers/cli';
import { extraEngine, stopEngine, type ExtraEngine } from '../helpers/engines';
import { tempDir, uniqueId } from '../helpers/fixtures';
import { INSTALLED_KEEPER, parseEnvironmentFile, readSystemdFile, unitValues, withKeeperAt } from './unit-file';

const run = promisify(execFile);
const unit = readSystemdFile('keeper.service');
const work = tempDir('keeper-unit-');
let engine: ExtraEngine | undefined;

beforeAll(() => {
  engine = extraEngine('unit');
});
afterAll(() => {
  if (engine) stopEngine(engine);
  fs.rmSync(work, { recursive: true, force: true });
});

async function verify(files: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const dir = fs.mkdtempSync(path.join(work, 'verify-'));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), withKeeperAt(text, KEEPER_BIN));
  }
  return run('systemd-analyze', ['verify', '--man=no', path.join(dir, 'keeper.service')])
    .then(({ stderr }) => ({ code: 0, stderr }))
    .catch((err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }));
}

/**
 * The unit's ExecStart= as systemd would start it: its argv (keeper's bin in place of /usr/bin/keeper), and the
 * env file's variables over systemd's own minimal environment, with this machine's `overrides`.
 */
function startAsSystemd(overrides: Record<string, string>) {
  const [execStart] = unitValues(unit, 'Service', 'ExecStart');
  const [binary, ...args] = execStart!.split(/\s+/);
  expect(binary).toBe(INSTALLED_KEEPER);
  const env = {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    ...parseEnvironmentFile(readSystemdFile('keeper.env')),
    ...overrides,
  };
  return watchOutput(spawn(process.execPath, [KEEPER_BIN, ...args], { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** What cannot hold on this machine: no /var/lib/keeper (StateDirectory=), no runsc on the engine, the suite's Temporal. */
const machine = (name: string) => ({
  KEEPER_DB: path.join(work, name, 'state.db'),
  KEEPER_TENANT_RUNTIME: 'runc',
  KEEPER_HOST_ID: uniqueId('unit-'),
  KEEPER_METRICS_PORT: '0',
  DOCKER_HOST: engine!.dockerHost,
  TEMPORAL_ADDRESS: inject('devServerAddress'),
});

describe('deploy/systemd/keeper.service', () => {
  it('passes systemd-analyze verify, alone and with its credentials drop-in', async () => {
    expect(unitValues(unit, 'Service', 'ExecStart')).toEqual([`${INSTALLED_KEEPER} worker`]);
    expect(await verify({ 'keeper.service': unit })).toEqual({ code: 0, stderr: '' });
    const dropIn = readSystemdFile('credentials.conf');
    expect(unitValues(dropIn, 'Service', 'LoadCredential')).toEqual([
      'notify-secret:/etc/keeper/credentials/notify-secret',
      'temporal-api-key:/etc/keeper/credentials/temporal-api-key',
    ]);
    // keeper gets the credential's path in the credentials directory (%d), never the secret.
    expect(unitValues(dropIn, 'Service', 'Environment')).toEqual([
      'KEEPER_NOTIFY_SECRET_FILE=%d/notify-secret',
      'KEEPER_TEMPORAL_API_KEY_FILE=%d/temporal-api-key',
    ]);
    expect(await verify({ 'keeper.service': unit, 'keeper.service.d/credentials.conf': dropIn })).toEqual({ code: 0, stderr: '' });
    // A bad key is reported: verify reads what the test gives it.
    expect((await verify({ 'keeper.service': unit.replace('[Service]', '[Service]\nNoSuchKey=1') })).stderr).toMatch(
      /Unknown key 'NoSuchKey'/,
    );
  });

  it('runs as its own user with the sandbox on, and restarts on failure but not on a usage error', async () => {
    const service = (key: string) => unitValues(unit, 'Service', key);
    expect(service('User')).toEqual(['keeper']);
    expect(service('SupplementaryGroups')).toEqual(['docker']);
    expect(service('NoNewPrivileges')).toEqual(['yes']);
    expect(service('ProtectSystem')).toEqual(['strict']);
    expect(service('ReadWritePaths')).toEqual(['/var/lib/keeper']);
    expect(service('StateDirectory')).toEqual(['keeper']);
    expect(service('PrivateTmp')).toEqual(['yes']);
    expect(service('Restart')).toEqual(['on-failure']);
    expect(service('RestartPreventExitStatus')).toEqual([String(EXIT_USAGE)]);
    // keeper rides out a dockerd restart (test/reliability/daemon-restart.test.ts): Docker's unit must not restart it.
    expect(unitValues(unit, 'Unit', 'Requires')).toEqual([]);
    expect(unitValues(unit, 'Unit', 'Wants')).toEqual(['network-online.target docker.service']);
    expect(parseEnvironmentFile(readSystemdFile('keeper.env')).KEEPER_DB).toBe('/var/lib/keeper/state.db');
    const { stdout } = await run('systemd-analyze', [
      'security',
      '--offline=true',
      '--no-pager',
      path.join(await unitCopy(), 'keeper.service'),
    ]);
    const exposure = Number(/Overall exposure level for keeper\.service: ([\d.]+)/.exec(stdout)?.[1]);
    expect(exposure, stdout.slice(-400)).toBeLessThanOrEqual(2);
  });

  it('its ExecStart with its env file drains on SIGTERM and exits 0, logging that it stopped', async () => {
    const keeper = startAsSystemd(machine('graceful'));
    try {
      await keeper.waitForOutput(/keeper is running[\s\S]*pool\s+next run/, 90_000);
    } finally {
      keeper.child.kill('SIGTERM');
    }
    expect(await keeper.exited).toBe(0);
    expect(keeper.output).toMatch(/"msg":"shutting down[^"]*"[\s\S]*"msg":"keeper worker stopped"/);
  });

  // The API key's line is not run: an API key turns TLS on, which the suite's plaintext dev server refuses.
  it('with its credentials drop-in, keeper reads the webhook secret from the credentials directory', async () => {
    const credentials = fs.mkdtempSync(path.join(work, 'credentials-'));
    fs.writeFileSync(path.join(credentials, 'notify-secret'), 'a-webhook-secret-of-32-characters\n', { mode: 0o600 });
    const [secretFile] = unitValues(readSystemdFile('credentials.conf'), 'Service', 'Environment')
      .filter((e) => e.startsWith('KEEPER_NOTIFY_SECRET_FILE='))
      .map((e) => e.replace('%d', credentials).split('=')[1]!);
    const keeper = startAsSystemd({
      ...machine('credentials'),
      CREDENTIALS_DIRECTORY: credentials,
      KEEPER_NOTIFY_SECRET_FILE: secretFile!,
      KEEPER_NOTIFY_WEBHOOK: 'http://127.0.0.1:9/alerts',
    });
    try {
      await keeper.waitForOutput(/keeper is running[\s\S]*pool\s+next run/, 90_000);
    } finally {
      keeper.child.kill('SIGTERM');
    }
    expect(await keeper.exited).toBe(0);
    expect(keeper.output).toMatch(/alerts {6}http:\/\/127\.0\.0\.1:9 .*\(signed\)/);
    expect(keeper.output).not.toMatch(/a-webhook-secret/);
  });

  it('exits non-zero on a fatal error: 1 for an unreachable Temporal, 2 for a bad setting', async () => {
    const unreachable = startAsSystemd({ ...machine('unreachable'), TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` });
    expect(await unreachable.exited).toBe(1);
    expect(unreachable.output).toMatch(/^keeper: .*127\.0\.0\.1/m);
    const badSetting = startAsSystemd({ ...machine('bad-setting'), KEEPER_CRASH_THRESHOLD: 'many' });
    expect(await badSetting.exited).toBe(EXIT_USAGE);
    expect(badSetting.output.trim().split('\n')).toEqual([expect.stringMatching(/^keeper: .*KEEPER_CRASH_THRESHOLD/)]);
  });
});

async function unitCopy(): Promise<string> {
  const dir = fs.mkdtempSync(path.join(work, 'security-'));
  fs.writeFileSync(path.join(dir, 'keeper.service'), withKeeperAt(unit, KEEPER_BIN));
  return dir;
}
