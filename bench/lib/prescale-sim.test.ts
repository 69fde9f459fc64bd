// Proves the simulation counts under-provisioned steps, shed volume and instance-steps as the issue
// defines them, that the reactive rule reads only y[t − lead − 1], and that the headroom tuning
// reaches the target cost without ever going above it.
import { describe, expect, it } from 'vitest';
import { bandInstances, coverage, reactiveInstances, simulate, tuneHeadroom, TUNE_HEADROOM_MIN } from './prescale-sim.ts';

describe('prescale simulation', () => {
  it('scores a plan: under steps, shed and instance-steps', () => {
    expect(simulate([10, 25, 5, 31], [1, 2, 1, 3], 10)).toEqual({ underSteps: 2, shed: 5 + 1, instanceSteps: 7 });
  });

  it('the reactive rule provisions from the value known at t − lead', () => {
    const y = [10, 20, 30, 40, 50, 60];
    // t = 3: y[0] = 10 → 1; t = 4: y[1] = 20 → 2; t = 5: y[2] = 30 → 3 (C = 10, lead 2).
    expect(Array.from(reactiveInstances(y, 3, 2, 10, 0))).toEqual([1, 2, 3]);
    expect(Array.from(reactiveInstances(y, 3, 2, 10, 0.5))).toEqual([2, 3, 5]);
    expect(() => reactiveInstances(y, 2, 2, 10, 0)).toThrow(/no value before/);
  });

  it('tunes the headroom to the largest cost at or below the target', () => {
    const p90 = Array.from({ length: 200 }, (_, i) => 50 + (i % 17) * 3);
    const cost = (h: number) => simulate(p90, bandInstances(p90, 10, h), 10).instanceSteps;
    for (const target of [cost(0), cost(0.3) + 3, cost(-0.2)]) {
      const tuned = tuneHeadroom(cost, target);
      expect(tuned.reached).toBe(true);
      expect(tuned.instanceSteps).toBeLessThanOrEqual(target);
      expect(cost(tuned.headroom)).toBe(tuned.instanceSteps);
      // One step more headroom than found (the bisection's resolution) would pass the target.
      expect(cost(tuned.headroom + 1e-6)).toBeGreaterThanOrEqual(tuned.instanceSteps);
    }
    expect(tuneHeadroom(cost, cost(0)).instanceSteps).toBe(cost(0));
    const unreachable = tuneHeadroom(cost, 10);
    expect(unreachable).toMatchObject({ reached: false, headroom: TUNE_HEADROOM_MIN });
  });

  it('coverage is the share of demand at or below the band', () => {
    expect(coverage([1, 2, 3, 4], [1, 1, 5, 5])).toBe(0.75);
  });
});
