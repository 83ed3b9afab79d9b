/**
 * The Engine contract (test/engine/contract.ts) against the in-memory engine, the test double that host/'s
 * millisecond tests run on (test/helpers/memory-engine.ts), on the real clock. What a real engine does by itself, the
 * test plays: a crash is `die`, a health check's verdict is `setHealth`. Restarts wait Docker's restart delay.
 */
import { beforeEach, describe } from 'vitest';
import { TEST_IMAGE } from '../helpers/fixtures';
import { MemoryEngine } from '../helpers/memory-engine';
import { engineContract, type ContractHost } from './contract';

let host: ContractHost;

beforeEach(() => {
  const engine = new MemoryEngine();
  engine.restartBackoff = true;
  engine.addImage(TEST_IMAGE);
  host = {
    engine,
    image: TEST_IMAGE,
    crash: async (id) => engine.die(id, { exitCode: 137 }),
    write: async (id, line) => engine.write(id, line),
    checkHealth: async (id, verdict) => engine.setHealth(id, verdict),
    makeImage: async (ref, labels) => engine.addImage(ref, { labels }),
    wedgeable: async () => {
      engine.deadlineMs = 300;
      return { engine, readDeadlineMs: 300, wedge: () => engine.wedge(), release: () => engine.release(), close: async () => undefined };
    },
  };
});

describe('the Engine contract, on the in-memory engine', () => engineContract(() => host));
