/**
 * The Temporal SDK's TLS options (Connection and NativeConnection alike) from certificate files. No vitest imports.
 */
import fs from 'node:fs';
import type { TLSConfig } from '@temporalio/client';
import { TLS_SERVER_NAME } from './facts';

/** Trusts the server through `caFile`; presents `client`'s certificate when given. */
export function sdkTls(caFile: string, client?: { clientCertFile: string; clientKeyFile: string }): TLSConfig {
  return {
    serverNameOverride: TLS_SERVER_NAME,
    serverRootCACertificate: fs.readFileSync(caFile),
    ...(client ? { clientCertPair: { crt: fs.readFileSync(client.clientCertFile), key: fs.readFileSync(client.clientKeyFile) } } : {}),
  };
}
