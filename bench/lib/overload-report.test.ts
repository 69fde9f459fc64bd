// Proves the overload bench's figures: Jain's index is taken over admitted rates relative to the max-min fair shares (1 for an exact max-min split even when quiet tenants offer less than a share, lower when the noisy tenant takes more), quota windows count ±5% exactly, a row counts client drops as errors, and the targets read met, not met or not run from the rows.
import { describe, expect, it } from 'vitest';
import { newHistogram } from './harness.ts';
import type { FlowStats } from './overload-load.ts';
import { checkTargets, fairness, quotaWindows, rowsTable, toRow, type Row } from './overload-report.ts';

describe('fairness', () => {
  it('scores an exact max-min split 1, where admitted/weight alone would not', () => {
    // Capacity 900: b and c offer 240 (less than a third), a gets the rest (420).
    const f = fairness([
      { tenant: 'a', weight: 1, offeredPerSec: 3000, admittedPerSec: 420 },
      { tenant: 'b', weight: 1, offeredPerSec: 240, admittedPerSec: 240 },
      { tenant: 'c', weight: 1, offeredPerSec: 240, admittedPerSec: 240 },
    ]);
    expect(f.jain).toBe(1);
    expect(f.tenants.map((t) => t.fairSharePerSec)).toEqual([420, 240, 240]);
    // (420 + 480)^2 / (3 (420^2 + 2 · 240^2)) = 810000 / 874800
    expect(f.jainByWeight).toBeCloseTo(810_000 / 874_800, 3);
  });

  it('falls when the noisy tenant takes the quiet ones\' share', () => {
    // Same total, but a takes 800 and b, c get 50 each: relative to fair [420, 240, 240] → [1.90, 0.21, 0.21].
    const f = fairness([
      { tenant: 'a', weight: 1, offeredPerSec: 3000, admittedPerSec: 800 },
      { tenant: 'b', weight: 1, offeredPerSec: 240, admittedPerSec: 50 },
      { tenant: 'c', weight: 1, offeredPerSec: 240, admittedPerSec: 50 },
    ]);
    const x = [800 / 420, 50 / 240, 50 / 240];
    const expected = (x[0]! + x[1]! + x[2]!) ** 2 / (3 * (x[0]! ** 2 + x[1]! ** 2 + x[2]! ** 2));
    expect(f.jain).toBeCloseTo(expected, 3);
    expect(f.jain).toBeLessThan(0.6);
  });

  it('weights the shares', () => {
    // Weights 2:1, both over their share of 300 admitted: fair is 200 / 100.
    const f = fairness([
      { tenant: 'a', weight: 2, offeredPerSec: 1000, admittedPerSec: 200 },
      { tenant: 'b', weight: 1, offeredPerSec: 1000, admittedPerSec: 100 },
    ]);
    expect(f.jain).toBe(1);
  });
});

describe('quotaWindows', () => {
  it('counts a window within ±5% of the target, boundaries included', () => {
    // Target 100/s over 10 s windows: 1050 and 950 are exactly ±5%, 1051 is not.
    const q = quotaWindows([1050, 950, 1051], 100, 10);
    expect(q).toMatchObject({ targetPerSec: 100, windows: 3, windowsWithin5pct: 2, admittedPerSecByWindow: [105, 95, 105.1], errorPctByWindow: [5, -5, 5.1] });
  });
});

function stats(o: Partial<FlowStats>): FlowStats {
  const latency = newHistogram();
  for (let i = 1; i <= 1000; i++) latency.recordValue(i * 10); // 10 µs .. 10 ms
  return { name: 'x', offeredPerSec: 100, durationMs: 10_000, due: 1000, sent: 1000, ok: 900, throttled: 50, other: 30, timeouts: 10, dropped: 20, answers: {}, latency, throttledLatency: newHistogram(), okByWindow: [900], okAfterWindows: 0, okAnsweredInRun: 900, ...o };
}

describe('toRow', () => {
  it('turns a case into the issue\'s row, client drops counted as other errors', () => {
    const r = toRow('edgeq', 3, stats({}), { totalMbMax: 500, byProcessMbMax: { gw: 100 } });
    expect(r).toMatchObject({ controller: 'edgeq', overload: 3, goodputPerSec: 90, throttledShare: 0.05, otherErrors: 50, rssMbMax: 500, clientDropped: 20, timeouts: 10 });
    expect(r.p99Ms).toBeCloseTo(9.9, 1);
    expect(r.p999Ms).toBeCloseTo(9.99, 1);
    expect(rowsTable([r])).toContain('| edgeq | 3x | 100 | 90 |');
    // The same admissions, 300 of them answered after the case (a queue answered late): 60/s.
    expect(toRow('none', 3, stats({ okAnsweredInRun: 600 }), { totalMbMax: 1, byProcessMbMax: {} })).toMatchObject({ goodputPerSec: 60, okAnsweredAfterCase: 300 });
  });
});

describe('checkTargets', () => {
  const row = (controller: Row['controller'], overload: number, goodputPerSec: number, p99Ms: number, otherErrors = 0, rssMbMax = 1000): Row => ({
    controller, overload, goodputPerSec, p99Ms, p999Ms: p99Ms, throttledShare: 0, otherErrors, rssMbMax, offeredPerSec: 0, p50Ms: 1, throttledP99Ms: null, due: 0, ok: 0, throttled: 0, timeouts: 0, clientDropped: 0, answers: {}, okAnsweredAfterCase: 0, rssMbMaxByProcess: {},
  });

  it('reads met and not met from the rows', () => {
    const rows = [row('edgeq', 1, 1000, 5), row('edgeq', 3, 950, 9), row('edgeq', 5, 940, 9, 0, 1200), row('seeds', 3, 800, 20), row('seeds', 5, 960, 20)];
    const t = checkTargets({ maxSustainablePerSec: 1000, unloadedP99Ms: 5, rows, jain: 0.97, quota: { windowsWithin5pct: 2, windows: 3 }, rssGrowthMax: 1.25 });
    const met = Object.fromEntries(t.map((c) => [c.target, c.met]));
    expect(met['edgeq 3x: goodput >= 90% of max sustainable']).toBe(true);
    expect(met['edgeq 3x: admitted p99 <= 2x unloaded p99']).toBe(true);
    expect(met['edgeq 3x: no error other than 429/503']).toBe(true);
    expect(met['edgeq: RSS bounded (3x, 5x peak <= 1.25x the 1x peak)']).toBe(true);
    expect(met['edgeq beats seeds at 3x on goodput and p99']).toBe(true);
    expect(met['edgeq beats seeds at 5x on goodput and p99']).toBe(false);
    expect(met['fairness: Jain index >= 0.95']).toBe(true);
    expect(met['quota: within ±5% in every 10 s window']).toBe(false);
  });

  it('says not run for what this run did not measure', () => {
    const t = checkTargets({ maxSustainablePerSec: 1000, unloadedP99Ms: 5, rows: [row('none', 3, 500, 900)], jain: null, quota: null, rssGrowthMax: 1.25 });
    expect(t.every((c) => c.met === null)).toBe(true);
  });
});
