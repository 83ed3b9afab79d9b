/**
 * deploy/systemd/ read as systemd reads it, for tests on a machine where systemd is not PID 1: the unit's
 * ExecStart= and an EnvironmentFile= parsed into a command line and an environment that a test can spawn.
 */
import fs from 'node:fs';
import path from 'node:path';

export const SYSTEMD_DIR = path.join(__dirname, '..', '..', 'deploy', 'systemd');
/** Where the unit expects keeper: `npm install -g` with Node's prefix /usr. */
export const INSTALLED_KEEPER = '/usr/bin/keeper';

/** Every value of `key` in `section` of a unit file, in order (a key may repeat, e.g. ReadWritePaths=). */
export function unitValues(unitText: string, section: string, key: string): string[] {
  let current = '';
  const values: string[] = [];
  for (const line of unitText.split('\n').map((l) => l.trim())) {
    const header = /^\[(.+)\]$/.exec(line);
    if (header) current = header[1]!;
    else if (current === section && line.startsWith(`${key}=`)) values.push(line.slice(key.length + 1));
  }
  return values;
}

/**
 * An EnvironmentFile= as systemd reads it: `KEY=VALUE` lines, `#` and `;` comments, blank lines, whitespace
 * around the key and value trimmed, one pair of surrounding double or single quotes removed.
 */
export function parseEnvironmentFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(`not an environment assignment: ${line}`);
    const value = line.slice(eq + 1).trim();
    env[line.slice(0, eq).trim()] = /^(["']).*\1$/.test(value) ? value.slice(1, -1) : value;
  }
  return env;
}

/** The unit's text with its ExecStart= binary replaced by `keeperBin`, for `systemd-analyze verify`. */
export function withKeeperAt(unitText: string, keeperBin: string): string {
  return unitText.replaceAll(`ExecStart=${INSTALLED_KEEPER} `, `ExecStart=${keeperBin} `);
}

export const readSystemdFile = (name: string) => fs.readFileSync(path.join(SYSTEMD_DIR, name), 'utf8');
