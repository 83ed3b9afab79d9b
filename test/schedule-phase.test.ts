/** Each host's loop fires at a phase of its interval of its own, fixed by host and loop: a fleet's schedules spread out. */
import { describe, expect, it } from 'vitest';
import { schedulePhaseMs } from '../src/temporal/schedules';

describe('schedule phase', () => {
  it('is whole seconds inside the interval, the same every time for a host and loop', () => {
    for (const every of [2_000, 600_000, 3_600_000]) {
      const phase = schedulePhaseMs('h1', 'pool', every);
      expect(phase % 1000).toBe(0);
      expect(phase).toBeGreaterThanOrEqual(0);
      expect(phase).toBeLessThan(every);
      expect(schedulePhaseMs('h1', 'pool', every)).toBe(phase);
    }
  });

  it("spreads 500 hosts' hourly schedules over the hour, and a host's loops apart", () => {
    const minutes = new Set(Array.from({ length: 500 }, (_, i) => Math.floor(schedulePhaseMs(`host-${i}`, 'gc', 3_600_000) / 60_000)));
    expect(minutes.size).toBeGreaterThan(50); // of 60: no herd at one instant
    expect(schedulePhaseMs('h1', 'gc', 3_600_000)).not.toBe(schedulePhaseMs('h1', 'pool', 3_600_000));
  });
});
