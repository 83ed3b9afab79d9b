/**
 * `npm run soak`: a long randomized fault run on the real stack, whose ledger must balance (bench/soak/run.ts).
 * Every death Docker recorded is counted exactly once, every circuit opening alerted under a key of its own, every
 * open circuit has a live timer, and no row is half-written; the report (Markdown, or with --json the ledger as one
 * JSON object: bench/soak/summary.ts) goes to stdout, progress to stderr, and the exit code is 1 when the ledger does
 * not balance, 2 on bad flags.
 *
 *   usage: npm run soak [-- --services 200 --minutes 60 --seed N --json]
 *
 * It starts its own Docker engine (scripts/extra-dockerd.sh, in a network namespace of its own), Temporal dev
 * server, fault proxy, webhook receiver and keeper worker, and stops every one of them at the end, also on failure
 * or Ctrl-C. It never uses the main engine, nor DOCKER_HOST: it needs root (as the extra engines do) and a build
 * (`npm run build`).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { onInterrupt } from './soak/cleanup';
import { namedEngine } from './soak/engine';
import { CommanderError, parseSoakArgs, type SoakOptions } from './soak/options';
import { runSoak } from './soak/run';

const say = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

function options(): SoakOptions {
  try {
    return parseSoakArgs(process.argv.slice(2));
  } catch (err) {
    if (err instanceof CommanderError && (err.code === 'commander.helpDisplayed' || err.code === 'commander.version')) process.exit(0);
    process.stderr.write(`soak: ${(err as Error).message.replace(/^error: /, '')}\n`);
    process.exit(2);
  }
}

async function main(): Promise<number> {
  const o = options();
  if (process.getuid?.() !== 0) {
    process.stderr.write('soak: needs root: it starts a Docker engine of its own (scripts/extra-dockerd.sh)\n');
    return 2;
  }
  if (!fs.existsSync(path.join(__dirname, '..', 'dist', 'cli.js'))) {
    process.stderr.write('soak: keeper is not built: run `npm run build` first\n');
    return 2;
  }
  const name = `soak-${crypto.randomBytes(3).toString('hex')}`;
  const interrupted = new AbortController();
  const stopListening = onInterrupt((signal) => {
    say(`${signal}: stopping the faults and everything the soak started`);
    interrupted.abort();
  });
  // An error nothing awaited (a stream's, say) must not end the process before it stopped what it started.
  let uncaught: unknown;
  process.on('uncaughtException', (err) => {
    say(`soak: uncaught ${err.stack ?? err}`);
    uncaught ??= err;
    interrupted.abort();
  });
  try {
    const result = await runSoak(o, namedEngine(name, `keeper-soak-${process.pid}`), say, interrupted.signal);
    // With --json the object is stdout's one line, and the report goes to stderr with the progress.
    if (o.json) process.stderr.write(`${result.markdown}\n`);
    process.stdout.write(o.json ? `${JSON.stringify(result.summary)}\n` : `${result.markdown}\n`);
    return result.balanced && !uncaught ? 0 : 1;
  } catch (err) {
    if (interrupted.signal.aborted) {
      say('interrupted: everything the soak started is stopped');
      return 130;
    }
    say(`soak failed: ${(err as Error).stack ?? err}`);
    return 1;
  } finally {
    stopListening();
  }
}

main().then((code) => process.exit(code));
