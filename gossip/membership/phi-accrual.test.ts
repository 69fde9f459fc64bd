// Proves phi accrual: 0 before any ack, low right after an ack and rising with silence, the
// classic values of a normal distribution (phi = −log10(1 − F)), capped and finite, the window
// bounded, and a regular history not turning a few ms of jitter into certainty (the σ floor).
import { describe, expect, it } from 'vitest';
import { PhiAccrual, phiOf, PHI_REPORTED_MAX } from './phi-accrual.ts';

describe('phi accrual', () => {
  it('matches −log10(1 − F) of a normal distribution', () => {
    // One σ past the mean: 1 − Φ(1) = 0.1587 → phi 0.80; two σ: 0.0228 → 1.64; the approximation is within 3%.
    expect(phiOf(1100, 1000, 100)).toBeCloseTo(0.8, 1);
    expect(phiOf(1200, 1000, 100)).toBeCloseTo(1.64, 1);
    expect(phiOf(1000, 1000, 100)).toBeCloseTo(0.301, 2);
    expect(phiOf(0, 1000, 100)).toBeLessThan(0.001);
    expect(phiOf(100_000, 1000, 100)).toBe(PHI_REPORTED_MAX);
  });

  it('is 0 before the first ack and grows with silence after regular acks', () => {
    const p = new PhiAccrual({ windowMax: 10, stdDevMsMin: 100, firstIntervalMs: 1000 });
    expect(p.phi(5000)).toBe(0);
    for (let t = 0; t <= 20_000; t += 1000) p.heartbeat(t);
    expect(p.samples).toBe(10);
    expect(p.phi(20_500)).toBeLessThan(0.01);
    expect(p.phi(21_000)).toBeCloseTo(0.301, 2);
    const at = [21_300, 21_600, 22_000, 23_000].map((t) => p.phi(t));
    for (let i = 1; i < at.length; i++) expect(at[i]!).toBeGreaterThan(at[i - 1]!);
    // The threshold of 8 is crossed a little under 6 σ past the mean (σ floored at 100 ms here).
    expect(p.phi(21_500)).toBeLessThan(8);
    expect(p.phi(21_650)).toBeGreaterThan(8);
  });

  it('uses the first-interval estimate before two acks', () => {
    const p = new PhiAccrual({ windowMax: 10, stdDevMsMin: 10, firstIntervalMs: 2000 });
    p.heartbeat(0);
    expect(p.phi(2000)).toBeCloseTo(0.301, 2);
    expect(p.phi(4000)).toBeGreaterThan(3);
  });

  it('forgets intervals past its window', () => {
    const p = new PhiAccrual({ windowMax: 3, stdDevMsMin: 1, firstIntervalMs: 1000 });
    for (const t of [0, 10_000, 20_000, 20_100, 20_200, 20_300]) p.heartbeat(t);
    expect(p.samples).toBe(3);
    // Only the three 100 ms intervals remain: 1 s of silence is far out.
    expect(p.phi(21_300)).toBe(PHI_REPORTED_MAX);
  });
});
