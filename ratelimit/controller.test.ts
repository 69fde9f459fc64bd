// The load controller against a simulated plant: a queue served at a rate that changes, fed at
// 3x that rate, with the produce p99 as the signal (the queueing delay over an unloaded 10 ms,
// target 2x unloaded). One step is one control interval (1 s): the plant is a pure function of
// the steps, so the run is deterministic without a clock.
import { describe, expect, it } from 'vitest';
import { GRADIENT_DEFAULTS, GradientController, SeedsRuleController, type CapacityController } from './controller.ts';
import { SIGNAL_TARGETS_DEFAULT, type LoadSignals } from './signals.ts';

const UNLOADED_MS = 10;
const TARGETS = { ...SIGNAL_TARGETS_DEFAULT, produceP99Ms: 2 * UNLOADED_MS };
const quiet: LoadSignals = { eventLoopDelayP99Ms: 0, produceP99Ms: UNLOADED_MS, fsyncP99Ms: 0, isrShrinks: 0, underReplicatedPartitions: 0, replicationBacklogRecords: 0, rssMb: 100 };

interface Step {
  capacity: number;
  admitted: number;
  served: number;
  latencyMs: number;
}

/** Runs `steps` intervals; `mu(t)` is the plant's service rate, `offered(t)` the demand. */
function run(c: CapacityController, steps: number, mu: (t: number) => number, offered: (t: number) => number): Step[] {
  let queue = 0;
  let latencyMs = UNLOADED_MS;
  let served = 0;
  const out: Step[] = [];
  for (let t = 0; t < steps; t++) {
    const decision = c.update({ ...quiet, produceP99Ms: latencyMs }, offered(t), served);
    const admitted = Math.min(offered(t), decision.capacityPerSec);
    const m = mu(t);
    served = Math.min(m, queue + admitted);
    queue = Math.max(0, queue + admitted - m);
    latencyMs = UNLOADED_MS + (queue / m) * 1000;
    out.push({ capacity: decision.capacityPerSec, admitted, served, latencyMs });
  }
  return out;
}

const within = (xs: number[], lo: number, hi: number) => xs.every((x) => x >= lo && x <= hi);

describe('GradientController against a simulated plant', () => {
  it('converges near the service rate under 3x overload and stays in a band', () => {
    const c = new GradientController({ initialPerSec: 200, targets: TARGETS });
    const steps = run(c, 120, () => 1000, () => 3000);
    const settled = steps.slice(60);
    expect(within(settled.map((s) => s.capacity), 850, 1150)).toBe(true);
    // Goodput ≥ 90% of the service rate, and the latency of what is admitted held near target.
    const goodput = settled.reduce((n, s) => n + s.served, 0) / settled.length;
    expect(goodput).toBeGreaterThanOrEqual(900);
    // The worst overshoot is one growth step above the service rate for one interval: growth × 1 s
    // of queueing on top of the unloaded latency (5% → 50 ms); the queue then drains in the cut.
    expect(Math.max(...settled.map((s) => s.latencyMs))).toBeLessThanOrEqual(UNLOADED_MS + GRADIENT_DEFAULTS.growth * 1000 + 1);
  });

  it('follows the plant down fast and back up after the load drops', () => {
    const c = new GradientController({ initialPerSec: 1000, targets: TARGETS });
    const mu = (t: number) => (t >= 60 && t < 120 ? 400 : 1000);
    const steps = run(c, 200, mu, () => 3000);
    // Down: within 10 intervals of the drop, capacity is at most 1.2x the new rate.
    expect(Math.max(...steps.slice(70, 120).map((s) => s.capacity))).toBeLessThanOrEqual(480);
    // Up: within 40 intervals of the recovery, back to ≥ 85% of it.
    expect(Math.min(...steps.slice(160, 200).map((s) => s.capacity))).toBeGreaterThanOrEqual(850);
  });

  it('a pressure that cuts do not relieve: one cut, then it holds (no collapse to the minimum), and cuts again on a new overload', () => {
    const c = new GradientController({ initialPerSec: 1000, targets: TARGETS });
    // The plant serves whatever is admitted, but its latency sits at 1.5x target regardless (a disk
    // slowed by others, refusals costing as much as produces).
    let cap = 0;
    for (let t = 0; t < 60; t++) cap = c.update({ ...quiet, produceP99Ms: 1.5 * TARGETS.produceP99Ms }, 3000, cap || 1000).capacityPerSec;
    // The one cut: to 90% of what was delivered (1000), not 1000 / 1.5; then held.
    expect(cap).toBeCloseTo(900, 6);
    // A new overload (pressure 3x, well past the held 1.5x): it cuts again.
    cap = c.update({ ...quiet, produceP99Ms: 3 * TARGETS.produceP99Ms }, 3000, 0).capacityPerSec;
    expect(cap).toBeLessThan(900);
    // Relieved (under target): it grows again.
    const before = cap;
    cap = c.update({ ...quiet, produceP99Ms: 0.5 * TARGETS.produceP99Ms }, 3000, cap).capacityPerSec;
    expect(cap).toBeGreaterThan(before);
  });

  it('does not grow a limit that demand never tests', () => {
    const c = new GradientController({ initialPerSec: 500, targets: TARGETS });
    run(c, 100, () => 10_000, () => 100);
    expect(c.capacity()).toBe(500);
  });

  it('never passes the ceiling (the forecast pre-scaling input)', () => {
    const c = new GradientController({ initialPerSec: 500, targets: TARGETS });
    c.setCeiling(700);
    const steps = run(c, 100, () => 10_000, () => 5_000);
    expect(Math.max(...steps.map((s) => s.capacity))).toBeLessThanOrEqual(700);
  });

  it('pre-warm: a planned ramp is admitted at once instead of climbing, and capacity falls back after it', () => {
    // A plant that serves 5 000/s; demand ramps from 500 to 3 000 at t = 20 and back at t = 40.
    const offered = (t: number) => (t >= 20 && t < 40 ? 3000 : 500);
    const plain = run(new GradientController({ initialPerSec: 600, targets: TARGETS }), 60, () => 5000, offered);
    const warmed = new GradientController({ initialPerSec: 600, targets: TARGETS });
    const steps: Step[] = [];
    // The plan for each step, decided ahead: 3 300/s over the ramp, none otherwise.
    for (let t = 0; t < 60; t++) {
      warmed.setPlanned(t >= 20 && t < 40 ? 3300 : null);
      steps.push(...run(warmed, 1, () => 5000, () => offered(t)));
    }
    const refused = (xs: Step[]) => xs.slice(20, 40).reduce((n, s, i) => n + (offered(20 + i) - s.admitted), 0);
    expect(refused(plain)).toBeGreaterThan(10_000);
    expect(refused(steps)).toBe(0);
    // After the ramp the lift is gone: capacity is the controller's own level again, well under the plan.
    expect(steps[45]!.capacity).toBeLessThan(3300);
    expect(steps[45]!.capacity).toBe(plain[45]!.capacity);
  });

  it('pre-warm never overrides overload protection: a plan above what the plant serves is cut and held off', () => {
    const c = new GradientController({ initialPerSec: 500, targets: TARGETS });
    c.setPlanned(5000);
    const steps = run(c, 60, () => 1000, () => 3000);
    // The lift admits 5 000/s once; the pressure then cuts, and the lift stays off long enough
    // for the law to settle near the service rate rather than bounce back to the plan.
    expect(steps[0]!.capacity).toBe(5000);
    const settled = steps.slice(30);
    expect(Math.max(...settled.map((s) => s.capacity))).toBeLessThan(5000);
    const goodput = settled.reduce((n, s) => n + s.served, 0) / settled.length;
    expect(goodput).toBeGreaterThanOrEqual(900);
  });

  it('pre-warm: demand beyond a low plan still grows capacity from the lifted level', () => {
    const c = new GradientController({ initialPerSec: 200, targets: TARGETS });
    c.setPlanned(1000);
    expect(c.capacity()).toBe(1000);
    const steps = run(c, 30, () => 10_000, () => 2000);
    // The first interval already grows from the lift (1 000 × 1.05), not from the own 200.
    expect(steps[0]!.capacity).toBe(1050);
    expect(steps[29]!.capacity).toBeGreaterThan(1000 * 1.05 ** 10);
  });

  it('beats the seeds\' rule on goodput at 3x overload (the baseline behind the same interface)', () => {
    const gradient = run(new GradientController({ initialPerSec: 1000, targets: TARGETS }), 120, () => 1000, () => 3000).slice(60);
    const seeds = run(new SeedsRuleController(3000, 10, TARGETS), 120, () => 1000, () => 3000).slice(60);
    const good = (xs: Step[]) => xs.reduce((n, s) => n + s.served, 0) / xs.length;
    const p99 = (xs: Step[]) => [...xs.map((s) => s.latencyMs)].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)]!;
    expect(good(gradient)).toBeGreaterThanOrEqual(good(seeds) * 0.99);
    expect(p99(gradient)).toBeLessThan(p99(seeds));
  });
});
