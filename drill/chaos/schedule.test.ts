// Proves the round schedule is a pure function of its seed, stays inside the round, covers every fault kind over many seeds, and never breaks a safety rule (checked against the rule's own test cases).
import { describe, expect, it } from 'vitest';
import type { Deployment } from '../faults/index.ts';
import { CHAOS_FAULT_NAMES } from './catalogue.ts';
import { eligibleFaults, FAULT_AT_MS_MIN, FAULT_END_MARGIN_MS, roundPlan, roundSchedule, roundSeedOf, ROUND_DURATION_MS, ROUND_FAULTS_MAX, scheduleViolation, type PlannedFault } from './schedule.ts';

function deployment(regions: number, brokers: number, faultStorage: Deployment['faultStorage'] = 'power-loss'): Deployment {
  return {
    dataDir: '/tmp/x',
    faultStorage,
    regions: Array.from({ length: regions }, (_, i) => ({
      region: `r${i}`,
      gateway: `http://127.0.0.1:${9000 + i}`,
      gatewayName: `r${i}/gateway`,
      arbiter: { name: `r${i}/arbiter`, address: 'x', dataDir: 'x' },
      brokers: Array.from({ length: brokers }, (_, b) => ({ name: `r${i}/broker-${b}`, id: b, address: 'x', admin: 'x', dataDir: `/tmp/r${i}/b${b}` })),
    })),
  };
}
const d3 = deployment(3, 3);
const SEEDS = 2_000;

describe('roundSeedOf', () => {
  it('is deterministic, 32-bit, and differs between rounds and campaigns', () => {
    expect(roundSeedOf(42, 7)).toBe(roundSeedOf(42, 7));
    const seen = new Set(Array.from({ length: 1000 }, (_, i) => roundSeedOf(42, i)));
    expect(seen.size).toBe(1000);
    expect(roundSeedOf(43, 0)).not.toBe(roundSeedOf(42, 0));
    for (const s of seen) expect(Number.isInteger(s) && s >= 0 && s <= 0xffff_ffff).toBe(true);
  });
});

describe('roundPlan', () => {
  it('same seed, same schedule; another seed, another one', () => {
    expect(roundPlan(1234, d3)).toEqual(roundPlan(1234, d3));
    const distinct = new Set(Array.from({ length: 50 }, (_, i) => JSON.stringify(roundPlan(roundSeedOf(1, i), d3))));
    expect(distinct.size).toBeGreaterThan(45);
  });

  it('1-3 faults inside the round, each a known kind in a known region, in time order', () => {
    const counts = new Set<number>();
    for (let i = 0; i < SEEDS; i++) {
      const plan = roundPlan(roundSeedOf(9, i), d3);
      counts.add(plan.length);
      expect(plan.length).toBeGreaterThanOrEqual(1);
      expect(plan.length).toBeLessThanOrEqual(ROUND_FAULTS_MAX);
      for (const [k, p] of plan.entries()) {
        expect(p.atMs).toBeGreaterThanOrEqual(FAULT_AT_MS_MIN);
        expect(p.atMs + p.holdMs).toBeLessThanOrEqual(ROUND_DURATION_MS - FAULT_END_MARGIN_MS);
        expect(d3.regions.map((r) => r.region)).toContain(p.region);
        if (k > 0) expect(p.atMs).toBeGreaterThanOrEqual(plan[k - 1]!.atMs);
      }
      expect(scheduleViolation(plan, 3)).toBeNull();
    }
    expect([...counts].sort()).toEqual([1, 2, 3]);
  });

  it('covers every fault kind, and every region, over many seeds', () => {
    const kinds = new Map<string, number>();
    const regions = new Set<string>();
    for (let i = 0; i < SEEDS; i++) for (const p of roundPlan(roundSeedOf(5, i), d3)) kinds.set(p.name, (kinds.get(p.name) ?? 0) + 1), regions.add(p.region);
    expect([...kinds.keys()].sort()).toEqual([...CHAOS_FAULT_NAMES].sort());
    // No kind starved by the rules: each appears in at least a quarter of its fair share.
    const fair = [...kinds.values()].reduce((a, b) => a + b, 0) / CHAOS_FAULT_NAMES.length;
    for (const [k, n] of kinds) expect(n, k).toBeGreaterThan(fair / 4);
    expect(regions.size).toBe(3);
  });

  it('draws only the kinds the deployment supports', () => {
    expect(eligibleFaults(deployment(1, 3))).not.toContain('region-isolate');
    expect(eligibleFaults(deployment(3, 3, 'none'))).not.toContain('power-loss-cell');
    expect(eligibleFaults(deployment(2, 1))).not.toContain('corrupt-flip');
    for (let i = 0; i < 300; i++) for (const p of roundPlan(i, deployment(1, 3, 'none'))) expect(['region-isolate', 'link-degrade', 'power-loss-broker', 'power-loss-cell']).not.toContain(p.name);
  });

  it('roundSchedule gives the runner the plan with its specs', () => {
    const s = roundSchedule(77, d3);
    expect(s.faults.map((f) => [f.fault.name, f.region, f.atMs, f.holdMs])).toEqual(s.plan.map((p) => [p.name, p.region, p.atMs, p.holdMs]));
  });
});

describe('scheduleViolation', () => {
  const f = (name: PlannedFault['name'], region: string, atMs: number, holdMs = 2_000): PlannedFault => ({ name, region, atMs, holdMs });
  it('refuses a majority of a cell and its arbiter at once, unless one fault kind does both', () => {
    expect(scheduleViolation([f('arbiter-loss', 'r0', 2_000), f('pause-broker', 'r0', 2_500)], 3)).toMatch(/blind|majority/);
    expect(scheduleViolation([f('region-kill', 'r0', 2_000)], 3)).toBeNull();
    expect(scheduleViolation([f('arbiter-loss', 'r0', 2_000)], 1)).toBeNull();
  });
  it('refuses overlapping process faults in one region when one picks blind; allows them apart or elsewhere', () => {
    expect(scheduleViolation([f('broker-kill', 'r0', 2_000), f('pause-broker', 'r0', 3_000)], 3)).toMatch(/blind/);
    expect(scheduleViolation([f('broker-kill', 'r0', 2_000), f('pause-broker', 'r1', 3_000)], 3)).toBeNull();
    expect(scheduleViolation([f('broker-kill', 'r0', 1_500, 1_000), f('pause-broker', 'r0', 8_000, 1_000)], 3)).toBeNull();
    expect(scheduleViolation([f('power-loss-broker', 'r0', 2_000), f('corrupt-flip', 'r0', 2_500)], 3)).toBeNull();
  });
  it('refuses more brokers than the cell, a whole-cell fault beside another broker fault, a gateway down under a cell reader, two link faults', () => {
    expect(scheduleViolation([f('kill-in-election', 'r0', 2_000), f('power-loss-broker', 'r0', 2_100), f('pause-broker', 'r0', 2_200)], 3)).toMatch(/take down 4/);
    expect(scheduleViolation([f('power-loss-cell', 'r0', 2_000), f('pause-broker', 'r0', 2_100)], 3)).toMatch(/another broker fault/);
    expect(scheduleViolation([f('pause-gateway', 'r0', 2_000), f('corrupt-truncate', 'r0', 2_100)], 3)).toMatch(/gateway/);
    expect(scheduleViolation([f('region-isolate', 'r0', 2_000), f('link-degrade', 'r2', 2_100)], 3)).toMatch(/links/);
    expect(scheduleViolation([f('power-loss-cell', 'r0', 2_000), f('pause-gateway', 'r0', 2_100)], 3)).toBeNull();
  });
});
