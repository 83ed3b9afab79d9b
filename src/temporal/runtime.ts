/**
 * The Temporal runtime is a process-wide singleton that must be configured before any connection exists.
 * keeper routes the SDK's own logs into its logger at WARN and above, so that operators see one log stream.
 */
import { DefaultLogger, IllegalStateError, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from '../log';

let installed = false;

export function installRuntime(log: Logger | undefined, opts: { metricsPort?: number; hostId?: string } = {}): void {
  if (installed) return;
  installed = true;
  const sdkLog = log?.child({ source: 'temporal-sdk' });
  // The SDK's Logger interface has log(level, …), which pino lacks: DefaultLogger hands each entry over.
  const sdkLogger = new DefaultLogger('WARN', (entry) => {
    if (sdkLog) sdkLog[entry.level === 'ERROR' ? 'error' : 'warn'](entry.message, entry.meta ?? {});
    else process.stderr.write(`temporal ${entry.level as LogLevel}: ${entry.message}\n`);
  });
  try {
    Runtime.install({
      logger: sdkLogger,
      telemetryOptions: {
        logging: { filter: 'WARN', forward: {} },
        ...(opts.metricsPort ? { metrics: prometheusExporter(opts.metricsPort, opts.hostId ?? '') } : {}),
      },
      shutdownSignals: [],
    });
  } catch (err) {
    // The SDK's one public word that the runtime was made already (a test's, or a host's in this process), and
    // it says so before making anything: that runtime's options stand.
    if (!(err instanceof IllegalStateError)) throw err;
  }
}

/**
 * The one place that puts `keeper_host` on metrics: globalTags reach the SDK's series and keeper's own (created
 * on this runtime's meter) alike, so no meter may add it again (Prometheus rejects a scrape with a label twice).
 * Counters end in `_total` and durations are in seconds, as Prometheus names them (`promtool check metrics`).
 */
function prometheusExporter(port: number, hostId: string) {
  return {
    prometheus: { bindAddress: `0.0.0.0:${port}`, countersTotalSuffix: true, useSecondsForDurations: true },
    globalTags: { keeper_host: hostId },
  };
}
