/**
 * The front door, walked as a newcomer walks it: a clean clone of this repository, `npm install`, then `npm start`,
 * with nothing of this checkout's (no node_modules, no dist, no .tools) and no keeper variable set. It must reach
 * the banner and the UI. The clone and its install are newcomer-install.test.ts's, made earlier in the run (this
 * file makes them itself when run on its own; ./newcomer.ts says why they are two files). The prestart finds the
 * suite's engine answering and uses it as it is; it provisions the Temporal CLI into the clone's own .tools (go
 * install, fast from Go's build cache when the suite's provisioning built it before). The banner says which runtime
 * runs tenant code: gVisor where the engine lists it, else runc, and why. Ctrl-C (SIGINT to the foreground process
 * group, as a terminal sends it) stops everything it started.
 *
 * A clone has only what is committed: run it on a clean tree (CI always does).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EMBEDDED_TEMPORAL_PORT, EMBEDDED_UI_PORT } from '../../src/settings';
import { embeddedPortsForFile } from '../helpers/embedded-ports';
import { waitFor } from '../helpers/fixtures';
import { cloneAndInstall, installedClone, newcomerDir, newcomerEnv } from './newcomer';

embeddedPortsForFile();
const MINUTE_MS = 60_000;
const dir = newcomerDir();

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => (s.end(), resolve(true)));
    s.on('error', () => resolve(false));
  });

/** Sends `signal` to the process group `pgid`; false once no process of it is left. */
function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('the front door on a clean clone', () => {
  it(
    'npm install, then npm start, reaches the banner and the UI; Ctrl-C stops it and its dev server',
    { timeout: 45 * MINUTE_MS },
    async () => {
      expect(await portOpen(EMBEDDED_TEMPORAL_PORT), 'nothing else may serve the embedded port during this test').toBe(false);
      const clone = installedClone(dir) ?? cloneAndInstall(dir);
      expect(fs.existsSync(path.join(clone, 'dist', 'cli.js')), 'npm install builds keeper').toBe(true);

      // detached: its own process group, so Ctrl-C reaches npm, the shell and keeper, as from a terminal.
      const start = spawn('npm', ['start'], { cwd: clone, env: newcomerEnv(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      start.stdout.on('data', (d) => (output += d));
      start.stderr.on('data', (d) => (output += d));
      try {
        await waitFor(
          'the banner',
          () => /keeper is running[\s\S]*pool\s+next run/.test(output) || start.exitCode !== null,
          20 * MINUTE_MS,
          500,
        );
        expect(output, 'npm start printed the banner').toMatch(/keeper is running/);
        expect(output).toMatch(/^ {2}state DB {4}.*\/keeper-newcomer-[^/]+\/keeper\/data\/state\.db$/m);
        expect(output).toMatch(/^ {2}temporal {4}127\.0\.0\.1:7233, namespace default, TLS off, auth none \(embedded dev server\)$/m);
        // Which runtime runs tenant code, and why when it is not gVisor: never silent.
        expect(output).toMatch(/^ {2}tenants {5}runtime (runsc: gVisor: .*|runc: WEAKER than ah's: .*\n {14}why: .+)$/m);
        const ui = await waitFor('the UI', async () => (await fetch(`http://127.0.0.1:${EMBEDDED_UI_PORT}/`)).ok, 2 * MINUTE_MS, 500);
        expect(ui).toBe(true);
        const banner = output.slice(output.indexOf('keeper is running'));
        console.log(`npm start, on a clean clone:\n${banner.split('\n').slice(0, 12).join('\n')}`);
      } finally {
        // npm itself exits at once on SIGINT; keeper drains and stops its dev server: wait for the whole group.
        signalGroup(start.pid!, 'SIGINT');
        const gone = await waitFor(
          'npm start and everything it started to exit',
          () => !signalGroup(start.pid!, 0),
          2 * MINUTE_MS,
          250,
        ).catch(() => false);
        if (!gone) signalGroup(start.pid!, 'SIGKILL');
      }
      expect(output).toMatch(/shutting down[\s\S]*keeper worker stopped/);
      expect(await portOpen(EMBEDDED_TEMPORAL_PORT), 'the embedded dev server is stopped').toBe(false);
    },
  );
});
