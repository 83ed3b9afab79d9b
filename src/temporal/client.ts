/** Clients for operator commands: TEMPORAL_ADDRESS, or the embedded server that `npm start` runs. */
import { Client, Connection } from '@temporalio/client';
import { EMBEDDED_TEMPORAL_PORT, type Settings } from '../settings';

export function operatorAddress(settings: Settings): string {
  return settings.temporalAddress ?? `127.0.0.1:${EMBEDDED_TEMPORAL_PORT}`;
}

export class TemporalUnreachableError extends Error {
  override name = 'TemporalUnreachableError';
}

/** Runs `fn` with a client, closing the connection after; one clear line when no server answers. */
export async function withOperatorClient<T>(settings: Settings, fn: (client: Client) => Promise<T>): Promise<T> {
  const address = operatorAddress(settings);
  let connection: Connection;
  try {
    connection = await Connection.connect({ address, connectTimeout: 3000 });
  } catch {
    const hint = settings.temporalAddress ? 'check TEMPORAL_ADDRESS' : 'is `npm start` running? (or set TEMPORAL_ADDRESS)';
    throw new TemporalUnreachableError(`no Temporal server answers at ${address}: ${hint}`);
  }
  try {
    return await fn(new Client({ connection, namespace: settings.namespace }));
  } finally {
    await connection.close();
  }
}
