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
