/**
 * The soak's own Docker engine: an extra engine (scripts/extra-dockerd.sh, in a network namespace of its own, with
 * the test images), never the main one. Restarting it is a fault: SIGTERM to its dockerd, which stops every
 * container (its own kill, then die and stop, as an API stop), then the script starts it again on the same data
 * root, and dockerd starts every container it had running (restart policy), with RestartCount back at 0.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { dockerdPid, EXTRA_DOCKERD, engineNamed, type ExtraEngine } from '../../test/helpers/engines';

const run = promisify(execFile);

/** How the soak's engine was started: by the suite (its run's engine, stopped by global teardown too) or by itself. */
export interface EngineStarter {
  start(): Promise<ExtraEngine>;
  stop(engine: ExtraEngine): Promise<void>;
}

/** An engine named `name`, recorded with `owner` (scripts/extra-dockerd.sh stop-owned OWNER stops what is left). */
export function namedEngine(name: string, owner: string): EngineStarter {
  return {
    async start() {
      const { stdout } = await run('bash', [EXTRA_DOCKERD, 'start', name], {
        env: { ...process.env, KEEPER_ENGINE_OWNER: owner },
        timeout: 180_000,
      });
      return { ...engineNamed(name), dockerHost: stdout.trim().split('\n').pop()! };
    },
    stop: (engine) => stopNamed(engine.name),
  };
}

export async function stopNamed(name: string): Promise<void> {
  await run('bash', [EXTRA_DOCKERD, 'stop', name], { timeout: 300_000 });
}

/** When a dockerd restart's phases happened (unix ms): its shutdown is [termAtMs, exitedAtMs]. */
export interface EngineRestart {
  termAtMs: number;
  exitedAtMs: number;
  answeringAtMs: number;
}

const sleep = (msValue: number) => new Promise((r) => setTimeout(r, msValue));

/**
 * SIGTERM to the engine's dockerd, a wait (bounded) for it to exit (then `onExited`, before anything can start again),
 * `downMs` more, then the engine started again.
 */
export async function restartDockerd(
  engine: ExtraEngine,
  starter: EngineStarter,
  downMs: number,
  onExited: (atMs: number) => void,
): Promise<EngineRestart> {
  const pid = dockerdPid(engine);
  if (pid === undefined) throw new Error(`dockerd of engine ${engine.name} is not running`);
  const termAtMs = Date.now();
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 90_000;
  while (dockerdPid(engine) === pid) {
    if (Date.now() > deadline) throw new Error(`dockerd ${pid} of engine ${engine.name} did not exit within 90 s of SIGTERM`);
    await sleep(50);
  }
  const exitedAtMs = Date.now();
  onExited(exitedAtMs);
  await sleep(downMs);
  await starter.start();
  return { termAtMs, exitedAtMs, answeringAtMs: Date.now() };
}
