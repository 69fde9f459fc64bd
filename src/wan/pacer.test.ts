// Proves the link bandwidth bucket paces reservations at its rate in arrival order, forgives nothing but what a burst allows, and follows rate changes (on a fake clock).
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.ts';
import { Pacer } from './pacer.ts';

describe('Pacer', () => {
  it('lets everything through at once when unlimited', () => {
    const p = new Pacer(new FakeClock(), 50);
    expect(p.reserve(1_000_000)).toBe(0);
    expect(p.reserve(1_000_000)).toBe(0);
  });

  it('queues reservations behind each other at the rate (a new bucket starts empty)', () => {
    const clock = new FakeClock();
    const p = new Pacer(clock, 50);
    p.setRate(1000); // 1 byte per ms
    expect(p.reserve(100)).toBeCloseTo(100);
    expect(p.reserve(100)).toBeCloseTo(200);
    clock.advance(150);
    // 150 bytes refilled of the 200 owed: the next 100 wait for 50 + 100 ms.
    expect(p.reserve(100)).toBeCloseTo(150);
  });

  it('saves at most one burst while idle', () => {
    const clock = new FakeClock();
    const p = new Pacer(clock, 50);
    p.setRate(10_000); // burst 500 bytes
    clock.advance(10_000);
    expect(p.reserve(500)).toBe(0);
    expect(p.reserve(1000)).toBeCloseTo(100);
  });

  it('a total over time matches the rate within the burst', () => {
    const clock = new FakeClock();
    const p = new Pacer(clock, 50);
    p.setRate(100_000);
    let lastWaitMs = 0;
    for (let i = 0; i < 300; i++) lastWaitMs = p.reserve(1000);
    // 300 kB at 100 kB/s: the last byte leaves after 3 s (the bucket started empty).
    expect(lastWaitMs).toBeCloseTo(3000);
  });

  it('follows a rate change, and a change to unlimited forgives the debt', () => {
    const clock = new FakeClock();
    const p = new Pacer(clock, 50);
    p.setRate(1000);
    expect(p.reserve(1000)).toBeCloseTo(1000);
    p.setRate(2000);
    // The 1000 bytes owed now drain at 2 bytes per ms.
    expect(p.reserve(1000)).toBeCloseTo(1000);
    p.setRate(0);
    expect(p.reserve(1000)).toBe(0);
    p.setRate(1000);
    expect(p.reserve(10)).toBeCloseTo(10);
  });
});
