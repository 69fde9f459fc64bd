// Proves the bounded Nelder-Mead finds the minimum of smooth functions, keeps every point inside
// its box, stops at its iteration cap, and treats NaN as +Infinity.
import { describe, expect, it } from 'vitest';
import { nelderMead } from './nelder-mead.ts';

describe('nelderMead', () => {
  it('finds the minimum of a quadratic bowl', () => {
    const r = nelderMead(([x, y]) => (x! - 1) ** 2 + (y! + 2) ** 2, [0, 0], { iterationsMax: 500, tolerance: 1e-14 });
    expect(r.converged).toBe(true);
    expect(r.x[0]).toBeCloseTo(1, 4);
    expect(r.x[1]).toBeCloseTo(-2, 4);
  });

  it('keeps every evaluated point within the bounds', () => {
    const seen: number[] = [];
    const r = nelderMead(
      ([x, y]) => {
        seen.push(x!, y!);
        return (x! - 5) ** 2 + y! ** 2;
      },
      [0, 0],
      { lower: -1, upper: 1, iterationsMax: 200 },
    );
    expect(Math.min(...seen)).toBeGreaterThanOrEqual(-1);
    expect(Math.max(...seen)).toBeLessThanOrEqual(1);
    expect(r.x[0]).toBeCloseTo(1, 6);
  });

  it('stops at the iteration cap and survives NaN regions', () => {
    let calls = 0;
    const r = nelderMead(
      ([x]) => {
        calls++;
        return x! > 0.7 ? Number.NaN : (x! - 3) ** 2;
      },
      [0],
      { iterationsMax: 5 },
    );
    expect(r.iterations).toBe(5);
    expect(r.converged).toBe(false);
    expect(Number.isFinite(r.value)).toBe(true);
    expect(r.x[0]).toBeLessThanOrEqual(0.7);
    expect(calls).toBeLessThan(5 * 4 + 3);
  });
});
