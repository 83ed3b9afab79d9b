/**
 * The server's configuration for the tests' cluster, written to DIR/config/development.yaml (what
 * `temporal-server --root DIR --config config --env development` reads). It follows the server module's
 * config/development-postgres12.yaml, with every service on 127.0.0.1 and free ports below 32768, no pprof listener
 * (a metrics listener only when a port is given), and the TLS, stores and dynamic config of facts.ts. No vitest imports.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { stringify } from 'yaml';
import { DYNAMIC_CONFIG, globalTls, persistence, type ServerTlsFiles, type SqlEndpoint } from './facts';

const SERVICES = ['frontend', 'history', 'matching', 'worker'] as const;
type ServicePorts = Record<(typeof SERVICES)[number], { grpcPort: number; membershipPort: number }>;

/**
 * A free loopback port below 32768. The server records each service's membership port in PostgreSQL's
 * cluster_membership.rpc_port, a SMALLINT: a port from the kernel's ephemeral range (32768-60999 here) makes
 * every service exit at start with `value "38537" is out of range for type smallint`.
 */
async function freeLowPort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 10_000 + Math.floor(Math.random() * (32_768 - 10_000));
    const free = await new Promise<boolean>((resolve) => {
      const probe = net.createServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free loopback port below 32768 after 100 tries');
}

/** Eight distinct free ports. */
async function freeServicePorts(): Promise<ServicePorts> {
  const taken = new Set<number>();
  while (taken.size < SERVICES.length * 2) taken.add(await freeLowPort());
  const [...free] = taken;
  return Object.fromEntries(SERVICES.map((s, i) => [s, { grpcPort: free[2 * i], membershipPort: free[2 * i + 1] }])) as ServicePorts;
}

function serverConfig(ports: ServicePorts, sql: SqlEndpoint, tls: ServerTlsFiles, dynamicConfigFile: string, metricsPort?: number) {
  const frontendAddress = `127.0.0.1:${ports.frontend.grpcPort}`;
  const services = Object.fromEntries(SERVICES.map((s) => [s, { rpc: { ...ports[s], bindOnIP: '127.0.0.1' } }]));
  return {
    log: { stdout: true, level: 'warn' },
    persistence: persistence(sql),
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
      tls: globalTls(tls),
      // Prometheus /metrics only when asked for (bench:fleet reads the `action` counter there).
      ...(metricsPort ? { metrics: { prometheus: { timerType: 'histogram', listenAddress: `127.0.0.1:${metricsPort}` } } } : {}),
    },
    services,
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: { active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: frontendAddress } },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: dynamicConfigFile, pollInterval: '10s' },
  };
}

/** Writes the server's config below `rootDir`; returns the frontend's address. */
export async function writeServerConfig(
  rootDir: string,
  sql: SqlEndpoint,
  tls: ServerTlsFiles,
  metricsPort?: number,
): Promise<{ address: string }> {
  const configDir = path.join(rootDir, 'config');
  fs.mkdirSync(configDir, { recursive: true, mode: 0o700 });
  const dynamicConfigFile = path.join(configDir, 'dynamicconfig.yaml');
  fs.writeFileSync(dynamicConfigFile, stringify(DYNAMIC_CONFIG));
  const ports = await freeServicePorts();
  fs.writeFileSync(path.join(configDir, 'development.yaml'), stringify(serverConfig(ports, sql, tls, dynamicConfigFile, metricsPort)), {
    mode: 0o600,
  });
  return { address: `127.0.0.1:${ports.frontend.grpcPort}` };
}
