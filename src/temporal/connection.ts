/**
 * The one way keeper connects to Temporal, as Temporal's own tools do (`@temporalio/envconfig`): the TEMPORAL_*
 * variables (address, namespace, API key, TLS on/off, client cert and key as path or data, server CA, server
 * name) and temporal.toml profiles, with their documented precedence; keeper's own --temporal-address,
 * --namespace and --temporal-profile win over them. The worker's NativeConnection and every command's client
 * come from here.
 *
 * A setting that cannot work fails before any connection is tried, with one line that names the file or the
 * variable (exit 2): a missing certificate file, a key that does not match its certificate, an unknown profile.
 * A server that does not answer, or that refuses the TLS handshake, fails with one line that says which (exit 1).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { Connection, type TLSConfig } from '@temporalio/client';
import { loadClientConfigProfile, toClientOptions, type ClientConfigProfile, type ConfigDataSource } from '@temporalio/envconfig';
import { environment, readSecretFile, SettingsError, type Settings } from '../settings';
import { diagnoseConnectFailure, V1_CERTIFICATE } from './diagnose';
import { firstLine, oneLine } from '../text';

export type TemporalAuth = 'mtls' | 'api-key' | 'none';

/**
 * The variables @temporalio/envconfig reads besides keeper's own settings (README's configuration table lists
 * them from here); each has the same key in a temporal.toml profile.
 */
export const TEMPORAL_CONNECTION_VARIABLES: { variable: string; help: string }[] = [
  { variable: 'TEMPORAL_NAMESPACE', help: 'namespace, when --namespace is not given (profile: namespace)' },
  { variable: 'TEMPORAL_CONFIG_FILE', help: 'the temporal.toml to read profiles from' },
  { variable: 'TEMPORAL_API_KEY', help: 'API key, sent as `authorization: Bearer …`; turns TLS on (profile: api_key)' },
  { variable: 'TEMPORAL_TLS', help: 'true or false: TLS on or off (profile: tls.disabled)' },
  { variable: 'TEMPORAL_TLS_CLIENT_CERT_PATH', help: 'client certificate for mTLS, or its PEM in …_DATA (profile: tls.client_cert_path)' },
  { variable: 'TEMPORAL_TLS_CLIENT_KEY_PATH', help: 'its private key, or the PEM in …_DATA (profile: tls.client_key_path)' },
  {
    variable: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
    help: "CA of the server's certificate, or its PEM in …_DATA (profile: tls.server_ca_cert_path)",
  },
  { variable: 'TEMPORAL_TLS_SERVER_NAME', help: 'name to verify the server certificate against (profile: tls.server_name)' },
];

/** Where and how to connect; what the banner and `keeper status` show (never the key itself). */
export interface TemporalTarget {
  /** Unset: no address anywhere (flag, TEMPORAL_ADDRESS, profile), so keeper uses a local server. */
  address: string | undefined;
  namespace: string;
  tls: TLSConfig | undefined;
  apiKey: string | undefined;
  metadata: Record<string, string> | undefined;
  auth: TemporalAuth;
  /** The profile used, when a config file gave one. */
  profile: string | undefined;
}

/** The connection is refused or the server does not answer: exit 1, one line that says which. */
export class TemporalConnectError extends Error {
  override name = 'TemporalConnectError';
}

/** Resolves the target from the settings and the environment; throws SettingsError for settings that cannot work. */
export function resolveTemporalTarget(
  settings: Pick<Settings, 'temporalAddress' | 'namespace' | 'temporalProfile'> & Partial<Pick<Settings, 'temporalApiKeyFile'>>,
  env = environment(),
): TemporalTarget {
  const profile = withApiKeyFile(loadProfile(settings.temporalProfile, env), settings.temporalApiKeyFile, env);
  checkTlsFiles(profile, env);
  const { connectionOptions, namespace } = toClientOptions(profile);
  const tls = connectionOptions.tls === true ? {} : connectionOptions.tls || undefined;
  const apiKey = typeof connectionOptions.apiKey === 'string' ? connectionOptions.apiKey : undefined;
  return {
    address: settings.temporalAddress ?? (connectionOptions.address || undefined), // TEMPORAL_ADDRESS='' means unset
    namespace: settings.namespace ?? namespace ?? 'default',
    tls,
    apiKey,
    metadata: connectionOptions.metadata as Record<string, string> | undefined,
    auth: apiKey ? 'api-key' : tls?.clientCertPair ? 'mtls' : 'none',
    profile: settings.temporalProfile ?? env.TEMPORAL_PROFILE,
  };
}

function configFileOf(env: NodeJS.ProcessEnv): string {
  return env.TEMPORAL_CONFIG_FILE ?? `${env.XDG_CONFIG_HOME ?? `${env.HOME ?? '~'}/.config`}/temporalio/temporal.toml`;
}

function loadProfile(name: string | undefined, env: NodeJS.ProcessEnv): ClientConfigProfile {
  const file = configFileOf(env);
  if (env.TEMPORAL_CONFIG_FILE && !fs.existsSync(env.TEMPORAL_CONFIG_FILE)) {
    throw new SettingsError(`TEMPORAL_CONFIG_FILE ${env.TEMPORAL_CONFIG_FILE} does not exist`);
  }
  try {
    return loadClientConfigProfile({ profile: name, overrideEnvVars: withoutEmptyTemporalVariables(env) });
  } catch (err) {
    const message = (err as Error).message;
    if (/Profile '.*' not found/.test(message))
      throw new SettingsError(`unknown Temporal profile "${name ?? env.TEMPORAL_PROFILE}" in ${file}`);
    throw new SettingsError(`Temporal config ${file}: ${firstLine(message)}`);
  }
}

/**
 * --temporal-api-key-file: the key read from a file (so it never shows in `ps`), set as the profile's api_key
 * so that it turns TLS on as TEMPORAL_API_KEY does. With TEMPORAL_API_KEY too, which one is meant is unclear.
 */
function withApiKeyFile(profile: ClientConfigProfile, file: string | undefined, env: NodeJS.ProcessEnv): ClientConfigProfile {
  if (file === undefined) return profile;
  if (env.TEMPORAL_API_KEY)
    throw new SettingsError('give TEMPORAL_API_KEY or --temporal-api-key-file (KEEPER_TEMPORAL_API_KEY_FILE), not both');
  return { ...profile, apiKey: readSecretFile('temporal-api-key-file', 'KEEPER_TEMPORAL_API_KEY_FILE', file) };
}

/** An empty TEMPORAL_* variable means unset: it must not blank out what a profile gives. */
function withoutEmptyTemporalVariables(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && !(e[0].startsWith('TEMPORAL_') && e[1] === '')),
  );
}

/** Every TLS file named must exist, and a client key must belong to its certificate: checked before connecting. */
function checkTlsFiles(profile: ClientConfigProfile, env: NodeJS.ProcessEnv): void {
  const tls = profile.tls;
  if (!tls || tls.disabled) return;
  const where = (variable: string, key: string) => (env[variable] !== undefined ? variable : `${key} of the Temporal profile`);
  const read = (source: ConfigDataSource | undefined, variable: string, key: string): Buffer | undefined => {
    if (!source) return undefined;
    if (!('path' in source)) return Buffer.from(source.data);
    if (!fs.existsSync(source.path)) throw new SettingsError(`${where(variable, key)}: ${source.path} does not exist`);
    return fs.readFileSync(source.path);
  };
  read(tls.serverCACert, 'TEMPORAL_TLS_SERVER_CA_CERT_PATH', 'server_ca_cert_path');
  const cert = read(tls.clientCert, 'TEMPORAL_TLS_CLIENT_CERT_PATH', 'client_cert_path');
  const key = read(tls.clientKey, 'TEMPORAL_TLS_CLIENT_KEY_PATH', 'client_key_path');
  if (!cert !== !key)
    throw new SettingsError(
      'a TLS client certificate needs its key, and a key its certificate (TEMPORAL_TLS_CLIENT_CERT_* and TEMPORAL_TLS_CLIENT_KEY_*)',
    );
  if (cert && key && !keyMatches(cert, key)) {
    throw new SettingsError(
      `the TLS client key (${where('TEMPORAL_TLS_CLIENT_KEY_PATH', 'client_key_path')}) does not match its certificate`,
    );
  }
  if (cert && x509Version(new crypto.X509Certificate(cert).raw) === 1) {
    throw new SettingsError(`the TLS client certificate (${where('TEMPORAL_TLS_CLIENT_CERT_PATH', 'client_cert_path')}) ${V1_CERTIFICATE}`);
  }
}

/**
 * A certificate's X.509 version from its DER (node's X509Certificate does not say): the TBSCertificate starts
 * with the explicit [0] version field only in v2 and v3; without it the certificate is v1.
 */
export function x509Version(der: Buffer): number {
  const tbs = der.subarray(derHeaderLength(der, 0)); // inside Certificate ::= SEQUENCE
  const first = derHeaderLength(tbs, 0); // inside TBSCertificate ::= SEQUENCE
  if (tbs[first] !== 0xa0) return 1;
  return tbs[first + derHeaderLength(tbs, first) + 2] + 1; // [0] holds INTEGER 02 01 <0 = v1, 1 = v2, 2 = v3>
}

/** The length of the tag and length octets of the DER element at `at`. */
function derHeaderLength(der: Buffer, at: number): number {
  const length = der[at + 1];
  return 2 + (length & 0x80 ? length & 0x7f : 0);
}

function keyMatches(cert: Buffer, key: Buffer): boolean {
  try {
    return new crypto.X509Certificate(cert).checkPrivateKey(crypto.createPrivateKey(key));
  } catch (err) {
    throw new SettingsError(`the TLS client certificate or key cannot be read: ${(err as Error).message}`);
  }
}

/** `127.0.0.1:7233, namespace default, TLS on, auth mTLS`: what an operator needs, never the key. */
export function describeTarget(t: TemporalTarget & { address: string }): string {
  const auth = t.auth === 'mtls' ? 'mTLS' : t.auth === 'api-key' ? 'API key' : 'none';
  return `${t.address}, namespace ${t.namespace}, TLS ${t.tls ? 'on' : 'off'}, auth ${auth}${t.profile ? `, profile ${t.profile}` : ''}`;
}

/** The options both connection kinds take. */
export function connectionOptions(t: TemporalTarget & { address: string }) {
  return { address: t.address, tls: t.tls, apiKey: t.apiKey, metadata: t.metadata };
}

/** A client connection; a refused or failed connection becomes one TemporalConnectError line. */
export async function connectClient(t: TemporalTarget & { address: string }, connectTimeoutMs = 10_000): Promise<Connection> {
  try {
    return await Connection.connect({ ...connectionOptions(t), connectTimeout: connectTimeoutMs });
  } catch (err) {
    throw await connectFailure(t, err);
  }
}

/** Says whether the server did not answer or refused the TLS handshake (see diagnose.ts). */
export async function connectFailure(t: TemporalTarget & { address: string }, err: unknown): Promise<TemporalConnectError> {
  const detail = oneLine(err);
  return new TemporalConnectError(await diagnoseConnectFailure(t, detail));
}
