/**
 * What an operator hits first, through the built bin: every command's `--help` lists its settings, `--version`,
 * secrets read from files (never on the command line, where `ps` shows them), a --db typo refused without
 * creating anything, an X.509 v1 client certificate named as such, and `keeper status` reporting what the
 * running worker uses (a real worker on the suite's dev server and an engine of this test's own).
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { openStateDb } from '../../src/db/open';
import { readWorkerConfig } from '../../src/db/worker-config';
import { ids } from '../../src/ids';
import { LOOP_NAMES } from '../../src/loops/registry';
import { defaultText, loadSettings, SETTINGS } from '../../src/settings';
import { resolveTemporalTarget, x509Version } from '../../src/temporal/connection';
import { connectNative } from '../../src/temporal/native';
import { keeper, startKeeper } from '../helpers/cli';
import { extraEngine, stopEngine, type ExtraEngine } from '../helpers/engines';
import { tempDir, uniqueId } from '../helpers/fixtures';
import { stopProcess } from '../helpers/prometheus';

const packageVersion = (JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string })
  .version;

/** A state DB as the host's worker leaves it: only `keeper worker` creates one. */
function existingDb(): string {
  const file = path.join(tempDir(), 'state.db');
  openStateDb(file).close();
  return file;
}

const oneLine = (stderr: string) => {
  expect(stderr.trimEnd().split('\n'), stderr).toHaveLength(1);
  return stderr;
};

describe('--help and --version', () => {
  it.each(['worker', 'status', 'circuit reset', 'gc'])(
    '`keeper %s --help` lists every setting with its variable and default',
    async (command) => {
      const r = await keeper([...command.split(' '), '--help']);
      expect(r.code).toBe(0);
      // The command's own options first (its --help at least), then the settings every command takes.
      expect(r.stdout.indexOf('-h, --help')).toBeGreaterThan(0);
      expect(r.stdout.indexOf('-h, --help')).toBeLessThan(r.stdout.indexOf('Settings (flag, else variable, else default):'));
      // Commander wraps descriptions; the help is compared with its whitespace folded.
      const help = r.stdout.replace(/\s+/g, ' ');
      for (const s of SETTINGS) {
        expect(help).toContain(`--${s.flag} <value>`);
        expect(help).toContain(`(default: ${defaultText(s)}) (env: ${s.env})`);
      }
    },
  );

  it('prints the package version, read from package.json', async () => {
    for (const flag of ['--version', '-V']) {
      const r = await keeper([flag]);
      expect(r).toMatchObject({ code: 0, stdout: `${packageVersion}\n`, stderr: '' });
    }
  });
});

describe('secrets in files', () => {
  const dir = tempDir();
  const write = (name: string, text: string) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text, { mode: 0o600 });
    return file;
  };
  const webhook = 'https://hooks.example.test/services/T000/SECRETTOKEN';

  it('--notify-secret-file is read with its trailing newline stripped, from the flag or KEEPER_NOTIFY_SECRET_FILE', async () => {
    const file = write('secret', 'sixteen-chars-or-more\n');
    expect(loadSettings({ notifySecretFile: file }, {}).notifySecret).toBe('sixteen-chars-or-more');
    expect(loadSettings({}, { KEEPER_NOTIFY_SECRET_FILE: file }).notifySecret).toBe('sixteen-chars-or-more');
    const db = existingDb();
    const r = await keeper(['status', '--db', db, '--notify-webhook', webhook, '--notify-secret-file', file]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/alerts\s+https:\/\/hooks\.example\.test \S+ \(signed\)/);
    expect(r.stdout + r.stderr).not.toContain('sixteen-chars-or-more');
  });

  it('refuses a secret and its file together, and a missing, unreadable, empty or short file, each in one line naming the flag and path (exit 2)', async () => {
    const db = existingDb();
    const good = write('good', 'sixteen-chars-or-more\n');
    const cases: [string[], NodeJS.ProcessEnv, string][] = [
      [
        ['--notify-secret', 'sixteen-chars-or-more', '--notify-secret-file', good],
        {},
        'keeper: give --notify-secret (KEEPER_NOTIFY_SECRET) or --notify-secret-file (KEEPER_NOTIFY_SECRET_FILE), not both\n',
      ],
      [
        ['--notify-secret-file', good],
        { KEEPER_NOTIFY_SECRET: 'sixteen-chars-or-more' },
        'keeper: give --notify-secret (KEEPER_NOTIFY_SECRET) or --notify-secret-file (KEEPER_NOTIFY_SECRET_FILE), not both\n',
      ],
      [
        ['--notify-secret-file', path.join(dir, 'nope')],
        {},
        `keeper: invalid --notify-secret-file (KEEPER_NOTIFY_SECRET_FILE): ${path.join(dir, 'nope')} does not exist\n`,
      ],
      // A directory: unreadable as a file even to root, whom a mode of 000 would not stop.
      [
        ['--notify-secret-file', dir],
        {},
        `keeper: invalid --notify-secret-file (KEEPER_NOTIFY_SECRET_FILE): ${dir} cannot be read (EISDIR)\n`,
      ],
      [
        ['--notify-secret-file', write('empty', '\n')],
        {},
        `keeper: invalid --notify-secret-file (KEEPER_NOTIFY_SECRET_FILE): ${path.join(dir, 'empty')} is empty\n`,
      ],
      [
        ['--notify-secret-file', write('short', 'short\n')],
        {},
        `keeper: invalid --notify-secret-file (${path.join(dir, 'short')}): must be at least 16 characters, without surrounding spaces (the value is not shown)\n`,
      ],
      [
        ['--temporal-api-key-file', path.join(dir, 'nokey')],
        {},
        `keeper: invalid --temporal-api-key-file (KEEPER_TEMPORAL_API_KEY_FILE): ${path.join(dir, 'nokey')} does not exist\n`,
      ],
      [
        ['--temporal-api-key-file', good],
        { TEMPORAL_API_KEY: 'a-key' },
        'keeper: give TEMPORAL_API_KEY or --temporal-api-key-file (KEEPER_TEMPORAL_API_KEY_FILE), not both\n',
      ],
    ];
    for (const [args, env, line] of cases) {
      const r = await keeper(['status', '--db', db, ...args], env);
      expect({ args, code: r.code, stderr: r.stderr, stdout: r.stdout }).toEqual({ args, code: 2, stderr: line, stdout: '' });
    }
  });

  it('--temporal-api-key-file gives the key as TEMPORAL_API_KEY would: auth API key, TLS on; it wins over the profile', () => {
    const key = write('api-key', 'key-from-a-file\n');
    const config = write('temporal.toml', '[profile.default]\naddress = "temporal.example.test:7233"\napi_key = "key-of-the-profile"\n');
    const target = resolveTemporalTarget(
      { temporalAddress: undefined, namespace: undefined, temporalProfile: undefined, temporalApiKeyFile: key },
      { TEMPORAL_CONFIG_FILE: config },
    );
    expect(target).toMatchObject({ address: 'temporal.example.test:7233', apiKey: 'key-from-a-file', auth: 'api-key', tls: {} });
  });
});

describe('only the worker creates a state DB', () => {
  const commands = [
    ['circuit', 'reset', 'svc1'],
    ['circuit', 'list'],
    ['status'],
    ['crashes', 'svc1'],
    ['pool', 'status'],
    ['pool', 'drain'],
    ['pool', 'claim', '--tenant', 't1', '--name', 'x'],
    ['pool', 'refill', '--once'],
    ['service', 'create', '--tenant', 't1', '--name', 'x', '--image', 'none'],
    ['service', 'start', 'svc1'],
    ['service', 'logs', 'svc1'],
    ['gc', '--once'],
    ['reconcile', '--once'],
    ['health'],
  ];

  it.each(commands.map((c) => [c.join(' '), c] as const))(
    '`keeper %s` refuses a --db that does not exist, in one line (exit 2), and creates nothing',
    async (_name, command) => {
      const dir = tempDir();
      const db = path.join(dir, 'typo', 'stte.db');
      const r = await keeper([...command, '--db', db], {}, 60_000);
      expect(r).toMatchObject({ code: 2, stdout: '' });
      expect(oneLine(r.stderr)).toBe(
        `keeper: state DB ${db} does not exist: only \`keeper worker\` creates one (check --db or KEEPER_DB)\n`,
      );
      expect(fs.readdirSync(dir)).toEqual([]);
    },
  );
});

describe('an X.509 v1 client certificate', () => {
  const dir = tempDir();
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  // What scripts/temporal-certs.sh does, less the -extfile for `v1`: `openssl x509 -req` then makes a v1 certificate.
  openssl(
    'req',
    '-x509',
    '-new',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=test CA',
  );
  for (const name of ['v1', 'v3']) {
    openssl(
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      `/CN=${name}`,
    );
    fs.writeFileSync(
      path.join(dir, 'v3.ext'),
      'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n',
    );
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-set_serial',
      '1',
      '-days',
      '2',
      '-out',
      `${name}.pem`,
      ...(name === 'v3' ? ['-extfile', 'v3.ext'] : []),
    );
  }
  const file = (name: string) => path.join(dir, name);
  const tlsEnv = (cert: string) => ({
    TEMPORAL_TLS_CLIENT_CERT_PATH: file(`${cert}.pem`),
    TEMPORAL_TLS_CLIENT_KEY_PATH: file(`${cert}.key`),
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: file('ca.pem'),
  });

  it('reads the version from the DER, as openssl prints it', () => {
    for (const name of ['v1', 'v3', 'ca']) {
      const printed = execFileSync('openssl', ['x509', '-in', file(`${name}.pem`), '-noout', '-text'], { encoding: 'utf8' }).match(
        /Version: (\d)/,
      )![1];
      expect(x509Version(new crypto.X509Certificate(fs.readFileSync(file(`${name}.pem`))).raw), name).toBe(Number(printed));
    }
    expect(x509Version(new crypto.X509Certificate(fs.readFileSync(file('v1.pem'))).raw)).toBe(1);
  });

  it('is refused before connecting, in one line that says how to reissue it (exit 2); a v3 one passes', async () => {
    const db = existingDb();
    const v1 = await keeper(['health', '--db', db, '--temporal-address', '127.0.0.1:1'], tlsEnv('v1'), 30_000);
    expect(v1).toMatchObject({ code: 2, stdout: '' });
    expect(oneLine(v1.stderr)).toBe(
      `keeper: the TLS client certificate (TEMPORAL_TLS_CLIENT_CERT_PATH) is an X.509 v1 certificate, which Temporal's client (rustls) refuses: ` +
        'reissue it as v3 by giving `openssl x509 -req` an -extfile with basicConstraints=CA:FALSE, keyUsage=digitalSignature,keyEncipherment and extendedKeyUsage=clientAuth\n',
    );
    const v3 = await keeper(['status', '--db', db, '--temporal-address', '127.0.0.1:1'], tlsEnv('v3'), 30_000);
    expect(v3.stderr).toBe('');
    expect(v3.stdout).toContain('auth mTLS');
  });

  it("rustls's own refusal, when a certificate reaches it, is translated the same way", async () => {
    const v1 = { crt: fs.readFileSync(file('v1.pem')), key: fs.readFileSync(file('v1.key')) };
    const target = {
      address: '127.0.0.1:1',
      namespace: 'default',
      tls: { clientCertPair: v1, serverRootCACertificate: fs.readFileSync(file('ca.pem')) },
      apiKey: undefined,
      metadata: undefined,
      auth: 'mtls' as const,
      profile: undefined,
    };
    const err = await connectNative(target).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(
      /^a TLS certificate of the connection to 127\.0\.0\.1:1 is an X\.509 v1 certificate, .* -extfile .*UnsupportedCertVersion/,
    );
  });
});

describe('keeper status reports what the running worker uses', () => {
  let engine: ExtraEngine | undefined;
  let worker: ReturnType<typeof startKeeper> | undefined;
  const hostId = uniqueId('ops-');
  afterAll(async () => {
    if (worker) await stopProcess(worker.child, 45_000);
    const connection = await Connection.connect({ address: inject('devServerAddress') });
    try {
      const client = new Client({ connection });
      for (const loop of LOOP_NAMES)
        await client.schedule
          .getHandle(ids.schedule(hostId, loop))
          .delete()
          .catch(() => undefined);
    } finally {
      await connection.close();
    }
    if (engine) stopEngine(engine);
  });

  it(
    'its webhooks, tenant runtime and pace, the differences of its own flags, and never a URL or a secret',
    { timeout: 240_000 },
    async () => {
      engine = extraEngine('ops-cli');
      const dir = tempDir();
      const db = path.join(dir, 'state.db');
      const secretFile = path.join(dir, 'secret');
      fs.writeFileSync(secretFile, 'a-secret-of-the-worker\n', { mode: 0o600 });
      const webhook = 'https://hooks.example.test/services/T000/SECRETTOKEN';
      const env = { DOCKER_HOST: engine.dockerHost };
      worker = startKeeper(
        [
          'worker',
          '--db',
          db,
          '--host-id',
          hostId,
          '--temporal-address',
          inject('devServerAddress'),
          '--tenant-runtime',
          'runc',
          '--notify-webhook',
          webhook,
          '--notify-secret-file',
          secretFile,
          '--reconcile-interval',
          '45s',
          '--pool-size',
          '0',
          '--gc-first-delay',
          '24h',
          '--metrics-port',
          '0',
          '--log-format',
          'json',
        ],
        env,
      );
      await worker.waitForOutput(/keeper is running[\s\S]*pool\s+next run/, 90_000);

      // The reproduction: a plain `keeper status` said "alerts none (--notify-webhook)".
      const plain = await keeper(['status', '--db', db, '--host-id', hostId], env);
      expect(plain.stderr).toBe('');
      expect(plain.code).toBe(0);
      expect(plain.stdout).toMatch(
        new RegExp(`^worker   keeper ${packageVersion.replace(/\./g, '\\.')}, pid ${worker.child.pid}, started \\d{4}-`, 'm'),
      );
      expect(plain.stdout).toContain(
        'reconcile on events, looked at every 10s, backstop 45s; gc, looked at every 1m, backstop 6h; pool on claims, looked at every 15s, backstop 6h; circuit opens at 5 crashes in 10m, recovery restart',
      );
      expect(plain.stdout).toMatch(/^alerts\s+https:\/\/hooks\.example\.test \S+ \(signed\): 0 delivered/m);
      expect(plain.stdout).toMatch(/^tenant runtime runc \(registered\)/m);
      expect(plain.stdout).toContain(`temporal ${inject('devServerAddress')}, namespace default, TLS off, auth none`);
      expect(plain.stdout).not.toContain('differs');

      const other = await keeper(
        [
          'status',
          '--db',
          db,
          '--host-id',
          hostId,
          '--tenant-runtime',
          'runsc',
          '--notify-webhook',
          '',
          '--reconcile-interval',
          '30s',
          '--gc-interval',
          '6h',
          '--json',
        ],
        env,
      );
      expect(other.stderr).toBe('');
      const status = JSON.parse(other.stdout);
      expect(status.worker).toMatchObject({
        hostId,
        keeperVersion: packageVersion,
        pid: worker.child.pid,
        config: { tenantRuntime: 'runc', signed: true, reconcileIntervalMs: 45_000, temporalEmbedded: false },
      });
      // Only what was given and differs; --gc-interval 6h is the worker's too.
      expect(status.worker.differences).toEqual([
        { flag: '--tenant-runtime', here: 'runsc', worker: 'runc' },
        { flag: '--notify-webhook', here: 'none', worker: status.worker.config.webhooks[0] },
        { flag: '--reconcile-interval', here: '30s', worker: '45s' },
      ]);
      expect(status.notifications).toMatchObject({ webhooks: status.worker.config.webhooks, signed: true });
      const text = await keeper(['status', '--db', db, '--host-id', hostId, '--tenant-runtime', 'runsc'], env);
      expect(text.stdout).toContain("differs  --tenant-runtime: this command runsc, the worker runc (the worker's is shown)");

      const stored = openStateDb(db, { create: false });
      try {
        const everything = [plain.stdout, other.stdout, JSON.stringify(readWorkerConfig(stored, hostId))].join('\n');
        expect(everything).not.toMatch(/SECRETTOKEN|services\/T000|a-secret-of-the-worker/);
      } finally {
        stored.close();
      }
    },
  );

  it('says so when no worker has recorded its configuration', async () => {
    const r = await keeper(['status', '--db', existingDb(), '--host-id', 'quiet-host']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      "worker   no worker of host quiet-host has recorded its configuration: tenant runtime and alerts below are this command's own settings",
    );
    expect(JSON.parse((await keeper(['status', '--db', existingDb(), '--json'])).stdout).worker).toBeNull();
  });
});
