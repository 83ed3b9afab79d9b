/**
 * The engine-stop hold (src/policy/deaths/engine-stop.ts) in the whole story: what dockerd's shutdown does to the
 * events keeper reads, as the soak saw it. It kills every container at once and their dies follow, so its 256-event
 * buffer may keep a container's die and have lost its kill, and the dies come seconds after the exits they report.
 */
import { describe, expect, it } from 'vitest';
import { deathsFound } from '../../../src/policy/deaths';
import type { ContainerEventFact } from '../../../src/policy/deaths/evidence';
import { exited, laterLook, T } from './runs';

const GRACE_MS = 120_000;
const EXIT_MS = T + 5_000;

/** keeper looked at T (running, RestartCount `before`); now the inspect shows the container exited at T+5 s. */
function found(events: ContainerEventFact[], o: { policy?: string; exitCode?: number; before?: number; after?: number } = {}) {
  const run = {
    ...exited,
    exitCode: o.exitCode ?? 143,
    restartPolicy: o.policy ?? 'unless-stopped',
    startedAtMs: T - 200_000,
    finishedAtMs: EXIT_MS,
  };
  const shown = laterLook(o.before ?? 0, { state: 'exited', restartCount: o.after ?? 0 }, run, 0, T / 1000 + 20);
  return deathsFound(shown, events, T + 20_000, GRACE_MS);
}

/** Held: nothing counted, the look kept as if the engine had not stopped it yet. */
const held = (f: ReturnType<typeof found>) => ({ counted: f.crash?.deaths ?? 0, held: f.heldEngineStop, look: f.look.state });
const HELD = { counted: 0, held: true, look: 'running' };

const kill: ContainerEventFact = { action: 'kill', atMs: EXIT_MS - 100, signal: '15' };
const dieAt = (lagMs: number, exitCode = 143): ContainerEventFact => ({ action: 'die', atMs: EXIT_MS + lagMs, exitCode });

describe("dockerd's shutdown stop, held for the grace", () => {
  it('under a policy that restarts every exit, when the buffer kept the die and lost the kill (the soak: 2 of 973 stops)', () => {
    expect(held(found([dieAt(2_600)]))).toEqual(HELD);
  });

  it("when the die comes 8 s after the exit: it is the look's death, not a restart's counted beside it", () => {
    expect(held(found([dieAt(8_000)]))).toEqual(HELD);
    // Under restart policy no, the kill before that late die says it.
    expect(held(found([kill, dieAt(8_000)], { policy: 'no' }))).toEqual(HELD);
  });

  it('and with no event at all (the read failed as the engine went away)', () => {
    expect(held(found([]))).toEqual(HELD);
  });
});

describe('a death of its own is counted', () => {
  it('under restart policy no, with no kill before its die', () => {
    expect(held(found([dieAt(50, 1)], { policy: 'no', exitCode: 1 }))).toEqual({ counted: 1, held: false, look: 'exited' });
  });

  it('when the shutdown cancelled the restart its policy had decided (RestartCount shows it): once', () => {
    expect(held(found([dieAt(50, 1)], { exitCode: 1, after: 1 }))).toEqual({ counted: 1, held: false, look: 'exited' });
  });

  it("a later run's: a die after the engine started the container again is a death of its own, beside the look's", () => {
    // The look's die is gone; an operator's start ran it again after the inspect, and it died by itself.
    const laterRun: ContainerEventFact[] = [{ action: 'start', atMs: EXIT_MS + 1_000 }, dieAt(3_000, 1)];
    expect(held(found(laterRun, { policy: 'no', exitCode: 1 }))).toEqual({ counted: 2, held: false, look: 'exited' });
  });
});
