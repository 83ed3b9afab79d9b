/** Runs the built `keeper` bin as an operator would, capturing its output and exit code. */
import { spawn } from 'node:child_process';
import path from 'node:path';

export const KEEPER_BIN = path.join(__dirname, '..', '..', 'bin', 'keeper.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function keeper(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 120_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [KEEPER_BIN, ...args], {
      env: { ...process.env, TEMPORAL_ADDRESS: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`keeper ${args.join(' ')} did not finish within ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
