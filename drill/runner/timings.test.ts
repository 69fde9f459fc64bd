// Proves the drill's timing arithmetic: recovery is the slowest affected region's first ack after the fault (null if one never acked again), and unavailability sums only the gaps over the bound, inside the window, including the edges.
import { describe, expect, it } from 'vitest';
import { recoverMs, unavailableMs, UNAVAILABLE_GAP_MS } from './timings.ts';

describe('drill timings', () => {
  const acks = new Map<string, number[]>([
    ['a', [100, 200, 300, 2_300, 2_400]],
    ['b', [100, 250, 5_000]],
  ]);

  const lane = (region: string, l: string, times: number[]) => times.map((atMs) => ({ region, lane: l, atMs }));

  it('recovery is the first ack after the gap of each interrupted lane, the slowest region, from the fault', () => {
    // Region a: lane p0 keeps acking every 200 ms through the fault; p1 stops at 900 and comes back at 3400.
    const steady = lane('a', 'p0', [200, 400, 600, 800, 1_000, 1_200, 1_400, 1_600, 1_800, 2_000, 2_200, 2_400, 2_600, 2_800, 3_000, 3_200, 3_400]);
    const stopped = lane('a', 'p1', [300, 600, 900, 3_400, 3_600]);
    expect(recoverMs([...steady, ...stopped], ['a'], 1_000, 4_000)).toBe(2_400);
    // Without the interrupted lane, the region recovers at its first ack after the fault.
    expect(recoverMs(steady, ['a'], 1_100, 4_000)).toBe(100);
    // Region b recovers later: the slowest region counts.
    const b = lane('b', 'p0', [500, 5_500]);
    expect(recoverMs([...steady, ...stopped, ...b], ['a', 'b'], 1_000, 6_000)).toBe(4_500);
    // Not affected regions are not measured.
    expect(recoverMs([...steady, ...stopped, ...b], ['a'], 1_000, 6_000)).toBe(2_400);
    // An interrupted lane that never acked again: no recovery.
    expect(recoverMs([...steady, ...lane('a', 'p1', [300, 900])], ['a'], 1_000, 4_000)).toBeNull();
    // A region with no ack after the fault, or none at all: no recovery.
    expect(recoverMs(lane('a', 'p0', [100, 200]), ['a'], 1_000, 4_000)).toBeNull();
    expect(recoverMs(steady, ['c'], 1_000, 4_000)).toBeNull();
    // A lane whose next ack is within the bound was not interrupted.
    expect(recoverMs(lane('a', 'p0', [900, 1_500]), ['a'], 1_000, 4_000, 1_000)).toBe(500);
  });

  it('unavailability sums the gaps over the bound within the window, edges included', () => {
    expect(UNAVAILABLE_GAP_MS).toBe(1_000);
    // a: 300 → 2300 is a 2000 ms gap; 2400 → 3000 is under the bound.
    expect(unavailableMs(acks, ['a'], 0, 3_000)).toEqual({ a: 2_000 });
    // b: 250 → 5000 is one 4750 ms gap; from 5000 to 7000 another 2000.
    expect(unavailableMs(acks, ['b'], 0, 7_000)).toEqual({ b: 6_750 });
    // A region with no ack at all in the window was unavailable all of it.
    expect(unavailableMs(acks, ['c'], 0, 1_500)).toEqual({ c: 1_500 });
    // Gaps at or under the bound are not counted.
    expect(unavailableMs(new Map([['a', [0, 1_000, 2_000]]]), ['a'], 0, 2_000)).toEqual({ a: 0 });
    expect(unavailableMs(acks, ['a'], 0, 3_000, 5_000)).toEqual({ a: 0 });
  });
});
