// The mesh summary of a planner report: compact (fits the mesh's 1 KiB state value with the rest
// of the region entry), checked on the way back in, and expanded onto another region's steps.
import { describe, expect, it } from 'vitest';
import { FORECAST_SUMMARY_POINTS_MAX, type RegionInfo } from '../../gossip/region/index.ts';
import { REGION_ENTRY_BYTES_MAX } from '../../gossip/region/region-publisher.ts';

import { expandSummary, parseForecastSummary, summarizeForMesh } from './mesh-summary.ts';
import type { CapacityModel } from './types.ts';

const model: CapacityModel = { method: 'seasonal_naive', trainedAt: null, backtestMase: null, liveMase: null, mode: 'predictive' };
const STEP = 60_000;

function report(points: number) {
  const t0 = 1_800_000_000_000;
  const forecast = Array.from({ length: points }, (_, i) => ({ t: t0 + i * STEP, p50: 100 + i, p90: 150 + i * 2, p10: 60 + i }));
  const plan = forecast.map((f) => ({ t: f.t, instances: { broker: Math.ceil(f.p90 / 100), gateway: Math.ceil(f.p90 / 50) }, ceilingPerSec: f.p90 }));
  return { step: STEP, forecast, plan, model };
}

describe('forecast summary in the mesh', () => {
  it('groups an hour of 1-minute steps into 12 points: P50 the mean, P90 the largest, P10 the smallest, the plan its peak', () => {
    const s = summarizeForMesh(report(60), 5);
    if (s.kind !== 'forecast') throw new Error('expected a forecast');
    expect(s.p50).toHaveLength(FORECAST_SUMMARY_POINTS_MAX);
    expect(s.pointMs).toBe(5 * STEP);
    expect(s.p50[0]).toBe(102); // mean of 100..104
    expect(s.p90[0]).toBe(158); // largest of 150..158
    expect(s.p10[0]).toBe(60); // smallest of 60..64
    expect(s.p10[11]).toBe(115);
    expect(s.plan).toEqual({ broker: 3, gateway: 6, ceilingPerSec: 268 });
    expect(Buffer.byteLength(JSON.stringify(s))).toBeLessThan(400);
  });

  it('is none without a forecast', () => {
    expect(summarizeForMesh(report(0), 5)).toEqual({ kind: 'none' });
  });

  it('reads back what it wrote and refuses malformed entries', () => {
    const s = summarizeForMesh(report(30), 5);
    expect(parseForecastSummary(JSON.parse(JSON.stringify(s)))).toEqual(s);
    const good = JSON.parse(JSON.stringify(s)) as Record<string, unknown>;
    for (const bad of [null, 7, { kind: 'none' }, { ...good, p50: [1] }, { ...good, p90: [-1, ...(good['p90'] as number[]).slice(1)] }, { ...good, pointMs: 0 }, { ...good, mode: 'x' }, { ...good, plan: { broker: 'a' } }, { ...good, p50: new Array(13).fill(1), p90: new Array(13).fill(1) }]) {
      expect(parseForecastSummary(bad)).toBeNull();
    }
    for (const bad of [{ ...good, p10: [1] }, { ...good, p10: 'x' }, { ...good, p10: [-1, ...(good['p10'] as number[]).slice(1)] }]) expect(parseForecastSummary(bad)).toBeNull();
  });

  it('reads a summary from a peer that publishes no lower band with its band starting at the P50', () => {
    const s = summarizeForMesh(report(30), 5);
    if (s.kind !== 'forecast') throw new Error('expected a forecast');
    const { p10: _dropped, ...old } = s;
    expect(parseForecastSummary(JSON.parse(JSON.stringify(old)))).toEqual({ ...s, p10: s.p50 });
  });

  it('fits the mesh value bound with a whole region entry at its largest figures', () => {
    // Twelve points of 7-digit rates in all three bands, and a region entry of 3 brokers and 2
    // gateways around it: the entry must stay under the mesh's 1 KiB so the forecast is published.
    const big = Array.from({ length: 60 }, (_, i) => ({ t: 1_800_000_000_000 + i * STEP, p50: 1_234_567.8 + i, p90: 2_345_678.9 + i, p10: 1_023_456.7 + i }));
    const s = summarizeForMesh({ step: STEP, forecast: big, plan: [], model }, 1_800_000_000_000);
    const entry: RegionInfo = {
      region: 'ap-southeast',
      health: { cellReady: true, brokersAlive: 3, brokersTotal: 3, underReplicatedPartitions: 0 },
      load: { ingressRecordsPerSec: 1_234_567.8, ingressBytesPerSec: 123_456_789.1, capacityRecordsPerSec: 2_345_678.9, headroomRecordsPerSec: 1_111_111.1 },
      forecast: s,
      gateways: ['http://127.0.0.1:18081', 'http://127.0.0.1:18082'],
      brokers: ['127.0.0.1:19092', '127.0.0.1:19093', '127.0.0.1:19094'],
    };
    expect(Buffer.byteLength(JSON.stringify(entry))).toBeLessThan(REGION_ENTRY_BYTES_MAX);
  });

  it('expands onto the steps of another region, scaled by its share', () => {
    const s = parseForecastSummary(summarizeForMesh(report(60), 5))!;
    const steps = expandSummary(s, 30_000, 0.5);
    expect(steps).toHaveLength(120);
    expect(steps[0]).toEqual({ t: s.t0, p50: 51, p90: 79, p10: 30 });
    // The 11th step of 30 s is at 5 min: the second point.
    expect(steps[10]).toEqual({ t: s.t0 + 300_000, p50: s.p50[1]! / 2, p90: s.p90[1]! / 2, p10: s.p10[1]! / 2 });
  });

  it('over a range past the summary\'s end, holds its last point (a region dead for longer than its hour)', () => {
    const s = parseForecastSummary(summarizeForMesh(report(60), 5))!;
    const end = s.t0 + s.p50.length * s.pointMs;
    const steps = expandSummary(s, STEP, 1, { from: end - 2 * STEP, steps: 5 });
    expect(steps.map((p) => p.t)).toEqual([0, 1, 2, 3, 4].map((i) => end + (i - 2) * STEP));
    expect(steps.every((p) => p.p50 === s.p50[11] && p.p90 === s.p90[11])).toBe(true);
    // Before the summary's start, its first point.
    expect(expandSummary(s, STEP, 1, { from: s.t0 - STEP, steps: 1 })).toEqual([{ t: s.t0 - STEP, p50: s.p50[0], p90: s.p90[0], p10: s.p10[0] }]);
  });
});
