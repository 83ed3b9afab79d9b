/** `keeper service create|start|stop|restart|rm|logs`: a small lifecycle so a standalone host has services to keep. */
import { Option, type Command } from 'commander';
import { createService, removeService, restartService, serviceLogs, startService, stopService, type ServiceRecord } from '../host/services';
import { jsonOption, print, settingsFrom, table, UsageError, withHost, withSettings } from './common';

function parseEnv(pairs: string[], flag = '--env'): Record<string, string> {
  const env: Record<string, string> = {};
  for (const p of pairs) {
    const eq = p.indexOf('=');
    if (eq <= 0) throw new UsageError(`invalid ${flag} "${p}": use KEY=VALUE`);
    env[p.slice(0, eq)] = p.slice(eq + 1);
  }
  return env;
}

/** Only keeper's own labels: ah.* labels say whose container it is, and are keeper's to set. */
function parseLabels(pairs: string[]): Record<string, string> {
  const labels = parseEnv(pairs, '--label');
  const other = Object.keys(labels).find((k) => !k.startsWith('keeper.'));
  if (other !== undefined)
    throw new UsageError(`invalid --label "${other}": only keeper.* labels can be set (e.g. keeper.crash-threshold=2)`);
  return labels;
}

const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

function render(s: ServiceRecord): string {
  return table(
    ['service', 'tenant', 'name', 'status', 'image', 'container'],
    [[s.id, s.tenantId, s.name, s.status, s.image ?? '', (s.containerId ?? '').slice(0, 12)]],
  );
}

export function registerServiceCommands(program: Command): void {
  const service = program.command('service').description('create and operate services on this host (standalone use)');

  registerCreateCommand(service);

  const simple = (verb: 'start' | 'stop' | 'restart' | 'rm', what: string) =>
    withSettings(service.command(`${verb} <serviceId>`))
      .description(what)
      .addOption(jsonOption())
      .action(async (id: string, opts: { json?: boolean }, cmd: Command) => {
        const settings = settingsFrom(cmd);
        const s = await withHost(settings, async (deps) => {
          if (verb === 'rm') return void (await removeService(deps, id));
          return verb === 'start' ? startService(deps, id) : verb === 'stop' ? stopService(deps, id) : restartService(deps, id);
        });
        if (s) print(s, !!opts.json, render);
        else process.stdout.write(`${id}: removed\n`);
      });
  simple('start', 'start the service (refused while its circuit is open)');
  simple('stop', 'stop the service; it is marked stopped first, so it is never counted as a crash');
  simple('restart', 'restart the service container (refused while its circuit is open)');
  simple('rm', 'stop and remove the container and delete the service row');

  withSettings(service.command('logs <serviceId>'))
    .description("the last lines of the service container's output")
    .option('--tail <n>', 'lines', '100')
    .action(async (id: string, opts: { tail: string }, cmd: Command) => {
      const tail = Number(opts.tail);
      if (!Number.isInteger(tail) || tail < 1) throw new UsageError(`invalid --tail "${opts.tail}": use a positive integer`);
      process.stdout.write(await withHost(settingsFrom(cmd), (deps) => serviceLogs(deps, id, tail)));
    });
}

/** `keeper service create`: the row, then the container, as ah deploys one. */
function registerCreateCommand(service: Command): void {
  withSettings(service.command('create'))
    .description('write the service row and run its container as ah does (deploying → running)')
    .requiredOption('--tenant <tenant>', 'tenant id (created if absent)')
    .requiredOption('--name <name>', 'service name')
    .requiredOption('--image <image>', 'image to run (never pulled)')
    .option('--port <port>', 'port the service listens on (ah default 8000)')
    .addOption(
      new Option('--env <KEY=VALUE>', 'environment variable (repeatable)').argParser((v: string, prev: string[] = []) => [...prev, v]),
    )
    .option('--health-cmd <cmd>', 'a shell command Docker runs as the health check')
    .addOption(
      new Option('--label <keeper.KEY=VALUE>', 'container label, e.g. the crash policy keeper.crash-threshold=2 (repeatable)').argParser(
        (v: string, prev: string[] = []) => [...prev, v],
      ),
    )
    .addOption(jsonOption())
    .action(
      async (
        opts: {
          tenant: string;
          name: string;
          image: string;
          port?: string;
          env?: string[];
          label?: string[];
          healthCmd?: string;
          json?: boolean;
        },
        cmd: Command,
      ) => {
        const settings = settingsFrom(cmd);
        if (!NAME.test(opts.tenant)) throw new UsageError(`invalid --tenant "${opts.tenant}": use lowercase letters, digits and '-'`);
        if (!NAME.test(opts.name)) throw new UsageError(`invalid --name "${opts.name}": use lowercase letters, digits and '-'`);
        const port = opts.port === undefined ? undefined : Number(opts.port);
        if (port !== undefined && !(Number.isInteger(port) && port >= 1 && port <= 65535))
          throw new UsageError(`invalid --port "${opts.port}": use 1-65535`);
        const env = parseEnv(opts.env ?? []);
        const labels = parseLabels(opts.label ?? []);
        const request = { tenant: opts.tenant, name: opts.name, image: opts.image, port, env, labels, healthCmd: opts.healthCmd };
        const s = await withHost(settings, (deps) => createService(deps, request));
        print(s, !!opts.json, render);
      },
    );
}
