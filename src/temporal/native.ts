/** The worker's connection, from the same target as every client (src/temporal/connection.ts). */
import { NativeConnection } from '@temporalio/worker';
import { connectFailure, connectionOptions, type TemporalTarget } from './connection';

export async function connectNative(target: TemporalTarget & { address: string }): Promise<NativeConnection> {
  try {
    return await NativeConnection.connect(connectionOptions(target));
  } catch (err) {
    throw await connectFailure(target, err);
  }
}
