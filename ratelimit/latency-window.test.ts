// Proves the interval latency window: an exact nearest-rank p99 while under its bound, a bounded reservoir past it that still estimates the p99 of a known distribution, and a reset per interval.
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../src/core/index.ts';
import { LATENCY_SAMPLES_MAX, LatencyWindow } from './latency-window.ts';

describe('LatencyWindow', () => {
  it('gives the nearest-rank p99 and starts over at each drain', () => {
    const w = new LatencyWindow();
    for (let i = 1; i <= 100; i++) w.record(i);
    w.record(NaN);
    w.record(-1);
    expect(w.count()).toBe(100);
    expect(w.drain()).toBe(99);
    expect(w.drain()).toBe(0);
  });

  it('keeps at most LATENCY_SAMPLES_MAX samples and still estimates the p99 of 100 000', () => {
    const seed = 14;
    const random = seededRandom(seed);
    const w = new LatencyWindow(seededRandom(seed + 1));
    // Uniform on [0, 100): the p99 is 99.
    for (let i = 0; i < 100_000; i++) w.record(random() * 100);
    expect(w.count()).toBe(100_000);
    const p99 = w.drain();
    // ±4.5 ranks of 2048 is ±0.22 percentile points; 1 point is a generous band.
    expect(Math.abs(p99 - 99), `seed ${seed}, ${LATENCY_SAMPLES_MAX} samples`).toBeLessThan(1);
  });
});
