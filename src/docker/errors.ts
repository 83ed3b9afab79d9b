/**
 * Engine errors, classified by HTTP status only. 404 means the thing is gone; every other failure,
 * including a refused connection, is transient and must never be read as "gone" (W-11).
 */
export class DockerError extends Error {
  override name = 'DockerError';
  constructor(
    readonly operation: string,
    readonly status: number | undefined,
    message: string,
  ) {
    super(message);
  }

  get isNotFound(): boolean {
    return this.status === 404;
  }
}

/**
 * The engine did not answer a call within its deadline (a wedged engine: it accepts the connection and says
 * nothing): transient, like every failure but a 404, and never read as "gone" (W-11). Its one line says which call,
 * and how long the engine was given. `notSent`: a one-shot command's call that was not made at all, because an
 * earlier call of the same command (`silentOn`) had already gone unanswered.
 */
export class DockerTimeout extends DockerError {
  override name = 'DockerTimeout';
  constructor(
    operation: string,
    readonly deadlineMs: number,
    silentOn: string = operation,
  ) {
    const what = silentOn === operation ? '' : `not sent: `;
    const on = silentOn === operation ? '' : ` ${silentOn}`;
    super(operation, undefined, `docker ${operation}: ${what}the engine did not answer${on} within ${deadlineMs / 1000} s`);
  }
}

/** Whether the engine left a call unanswered past its deadline (DockerTimeout), as opposed to refusing or failing it. */
export function isEngineSilent(err: unknown): err is DockerTimeout {
  return err instanceof DockerTimeout;
}

export function isNotFound(err: unknown): boolean {
  return err instanceof DockerError && err.isNotFound;
}

/**
 * Awaits `work` (a promise, or a function that makes one), treating the engine's 404 as done: what was to be
 * removed, stopped or detached is already gone. Any other error is thrown.
 */
export async function ignoreNotFound(work: Promise<unknown> | (() => Promise<unknown>)): Promise<void> {
  try {
    await (typeof work === 'function' ? work() : work);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}
