/**
 * Clients for operator commands: the configured Temporal (flag, TEMPORAL_* variables or a profile), else the
 * embedded server that `npm start` runs on this machine. In app/, as every Temporal client keeper makes.
 */
import { Client } from '@temporalio/client';
import { EMBEDDED_TEMPORAL_PORT, type Settings } from '../settings';
import { connectClient, resolveTemporalTarget, TemporalConnectError, type TemporalTarget } from '../temporal/connection';

export type ResolvedTarget = TemporalTarget & { address: string };

/** The configured target; with no address anywhere, `npm start`'s embedded server on this machine. */
export function operatorTarget(settings: Settings): ResolvedTarget & { embedded: boolean } {
  const target = resolveTemporalTarget(settings);
  return target.address
    ? { ...target, address: target.address, embedded: false }
    : { ...target, address: `127.0.0.1:${EMBEDDED_TEMPORAL_PORT}`, embedded: true };
}

/** Runs `fn` with a client, closing the connection after; one clear line when no server answers. */
export async function withOperatorClient<T>(settings: Settings, fn: (client: Client) => Promise<T>, connectTimeoutMs = 3000): Promise<T> {
  const target = operatorTarget(settings);
  const connection = await connectClient(target, connectTimeoutMs).catch((err: Error) => {
    if (!target.embedded) throw err;
    throw new TemporalConnectError(`no Temporal server answers at ${target.address}: is \`npm start\` running? (or set TEMPORAL_ADDRESS)`);
  });
  try {
    return await fn(new Client({ connection, namespace: target.namespace }));
  } finally {
    await connection.close();
  }
}
