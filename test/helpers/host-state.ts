/**
 * What the suite must leave as it found it: the host's network interfaces, routes and iptables rules, the main
 * engine's networks, containers and volumes, and the processes running. Global setup captures it, global
 * teardown captures it again, and any difference fails the run. No vitest imports: global setup loads this.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import Dockerode from 'dockerode';
import { dockerOptions } from '../../src/docker/client';

export interface HostState {
  interfaces: string[];
  routes: string[];
  iptables: string[];
  networks: string[];
  containers: string[];
  volumes: string[];
}

function run(cmd: string, args: string[], netns?: string): string {
  const [bin, argv] = netns ? ['nsenter', [`--net=/run/netns/${netns}`, cmd, ...args]] : [cmd, args];
  return execFileSync(bin, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 });
}

const lines = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);

/** Name and kind of each interface: flags and counters change with traffic, the set of interfaces must not. */
function interfaces(netns?: string): string[] {
  return lines(run('ip', ['-o', 'link', 'show'], netns))
    .map((l) => {
      const m = /^\d+:\s+([^:@]+)(?:@\S+)?:.*?link\/(\S+)/.exec(l);
      return m ? `${m[1]} (${m[2]})` : l;
    })
    .sort();
}

/**
 * The routes, as configured. `linkdown` comes and goes with a bridge's carrier. The kernel's own IPv6 link-local
 * and multicast routes appear on an interface the first time it gets a carrier (docker0, when the first container
 * joins the default bridge) and stay: they are the kernel's autoconfiguration, not a route anyone set, so they are
 * left out; a deleted or added interface still shows in the interfaces and its IPv4 routes.
 */
function routes(netns?: string): string[] {
  // `ip route show table all` lists the IPv6 tables too (iproute2 6.1), so the filter applies to both lists.
  const v4 = lines(run('ip', ['route', 'show', 'table', 'all'], netns));
  const v6 = lines(run('ip', ['-6', 'route', 'show', 'table', 'all'], netns));
  const configured = [...v4, ...v6].filter((r) => !KERNEL_IPV6_AUTOCONF.test(r));
  return [...new Set(configured.map((r) => r.replace(/\s+linkdown\b/g, '')))].sort();
}

const KERNEL_IPV6_AUTOCONF = /^(fe80::\/64 |local fe80::|multicast ff00::\/8 ).*\bproto kernel\b/;

/** Rules and chains, without counters and the generated-at comments. */
function iptables(netns?: string): string[] {
  let text: string;
  try {
    text = run('iptables-save', [], netns);
  } catch {
    return ['(iptables-save not available)'];
  }
  return lines(text)
    .filter((l) => !l.startsWith('#'))
    .map((l) => l.replace(/\s\[\d+:\d+\]$/, ''));
}

/** The networks, containers and volumes of the engine on `dockerHost`, in the form HostState holds them. */
export async function captureEngineState(dockerHost: string | undefined): Promise<Pick<HostState, 'networks' | 'containers' | 'volumes'>> {
  const docker = new Dockerode(dockerOptions(dockerHost));
  const [networks, containers, volumes] = await Promise.all([
    docker.listNetworks(),
    docker.listContainers({ all: true }),
    docker.listVolumes(),
  ]);
  return {
    networks: networks.map((n) => `${n.Name} ${n.Id.slice(0, 12)} (${n.Driver})`).sort(),
    containers: containers.map((c) => `${(c.Names?.[0] ?? '').replace(/^\//, '')} ${c.Id.slice(0, 12)}`).sort(),
    volumes: (volumes.Volumes ?? []).map((v) => v.Name).sort(),
  };
}

/** The host's state as seen from `netns` (the host's own when unset) and the engine on `dockerHost`. */
export async function captureHostState(opts: { netns?: string; dockerHost?: string } = {}): Promise<HostState> {
  return {
    interfaces: interfaces(opts.netns),
    routes: routes(opts.netns),
    iptables: iptables(opts.netns),
    ...(await captureEngineState(opts.dockerHost ?? process.env.DOCKER_HOST)),
  };
}

/** One line per difference: `interfaces: gone docker0 (ether)`, `containers: left behind ah-x 1a2b…`. */
export function diffHostState<K extends keyof HostState>(before: Pick<HostState, K>, after: Pick<HostState, K>): string[] {
  const out: string[] = [];
  for (const key of Object.keys(before) as K[]) {
    const was = new Set(before[key]);
    const now = new Set(after[key]);
    for (const x of before[key]) if (!now.has(x)) out.push(`${key}: gone ${x}`);
    for (const x of after[key]) if (!was.has(x)) out.push(`${key}: left behind ${x}`);
  }
  return out;
}

/** The variable global setup gives every process the suite starts, so that its leftovers can be told apart. */
export const RUN_TAG_VARIABLE = 'KEEPER_TEST_RUN';

export interface ProcessInfo {
  pid: number;
  args: string;
}

/**
 * Processes still running that carry `tag` in their environment: started by this run (directly, or by
 * something it started: dockerd's containerd and shims inherit it), other than vitest's own processes.
 * Concurrent runs and unrelated processes carry another tag or none, so they never count.
 */
export function processesOfRun(tag: string): ProcessInfo[] {
  return processesMarked(RUN_TAG_VARIABLE, tag);
}

/** Processes still running with `variable=value` in their environment, other than this one and vitest's own. */
export function processesMarked(variable: string, value: string): ProcessInfo[] {
  const marker = `${variable}=${value}`;
  const out: ProcessInfo[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let environ: string;
    let args: string;
    try {
      environ = fs.readFileSync(`/proc/${entry}/environ`, 'utf8');
      args = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    } catch {
      continue; // exited meanwhile, or a kernel thread
    }
    if (!environ.split('\0').includes(marker) || args === '' || /vitest/.test(args)) continue;
    out.push({ pid: Number(entry), args });
  }
  return out;
}
