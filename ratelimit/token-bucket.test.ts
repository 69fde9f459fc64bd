import { describe, expect, it } from 'vitest';
import { FakeClock } from '../src/core/index.ts';
import { TokenBucket } from './token-bucket.ts';

describe('TokenBucket', () => {
  it('starts full, refuses past the burst and says how long until the tokens are there', () => {
    const clock = new FakeClock();
    const b = new TokenBucket({ ratePerSec: 100, burst: 10 }, clock);
    for (let i = 0; i < 10; i++) expect(b.tryTake(1).ok).toBe(true);
    // Empty: one token comes every 10 ms.
    expect(b.tryTake(1)).toEqual({ ok: false, throttleMs: 10 });
    expect(b.tryTake(5)).toEqual({ ok: false, throttleMs: 50 });
    clock.advance(50);
    expect(b.tryTake(5).ok).toBe(true);
    expect(b.balance()).toBe(0);
  });

  it('never holds more than the burst, however long it idles', () => {
    const clock = new FakeClock();
    const b = new TokenBucket({ ratePerSec: 1000, burst: 50 }, clock);
    clock.advance(3_600_000);
    expect(b.balance()).toBe(50);
  });

  it('take() goes negative and the throttle time is the deficit at the rate (PIP-322)', () => {
    const clock = new FakeClock();
    const b = new TokenBucket({ ratePerSec: 1000, burst: 100 }, clock);
    expect(b.take(100)).toEqual({ ok: true, throttleMs: 0 });
    expect(b.take(500)).toEqual({ ok: false, throttleMs: 500 });
    expect(b.balance()).toBe(-500);
    clock.advance(499);
    expect(b.tryTake(1).ok).toBe(false);
    clock.advance(2);
    expect(b.tryTake(1).ok).toBe(true);
  });

  it('holds its rate exactly over a simulated day of uneven steps (no float drift)', () => {
    const clock = new FakeClock();
    const rate = 7_919; // a prime: no step divides it evenly
    // A second's burst: no step is long enough to fill it, so nothing is lost to the cap.
    const b = new TokenBucket({ ratePerSec: rate, burst: rate }, clock);
    b.take(rate);
    let taken = 0;
    const day = 86_400_000;
    let t = 0;
    // Steps of 1.3-37 ms, fractional: the bucket counts whole milliseconds and carries the rest.
    for (let i = 0; t < day; i++) {
      const step = 1.3 + ((i * 7919) % 357) / 10;
      clock.advance(step);
      t += step;
      const bal = Math.floor(b.balance());
      if (bal > 0) {
        b.take(bal);
        taken += bal;
      }
    }
    const expected = Math.floor(t) * rate / 1000;
    // What is left is under one token (taken whole), and nothing was lost to the cap.
    expect(expected - taken).toBeGreaterThanOrEqual(0);
    expect(expected - taken).toBeLessThan(1);
    expect(taken).toBeGreaterThan(680_000_000);
  });

  it('large rates and bursts stay exact (bytes/s at the quota maximum)', () => {
    const clock = new FakeClock();
    const b = new TokenBucket({ ratePerSec: 1_000_000_000_000, burst: 1_000_000_000_000 }, clock);
    expect(b.take(999_999_999_999).ok).toBe(true);
    expect(b.balance()).toBe(1);
    clock.advance(1);
    expect(b.balance()).toBe(1_000_000_001);
  });

  it('reconfigure keeps the balance, capped at the new burst', () => {
    const clock = new FakeClock();
    const b = new TokenBucket({ ratePerSec: 10, burst: 100 }, clock);
    b.reconfigure({ ratePerSec: 10, burst: 20 });
    expect(b.balance()).toBe(20);
    b.take(20);
    b.reconfigure({ ratePerSec: 1000, burst: 20 });
    clock.advance(10);
    expect(b.balance()).toBe(10);
  });
});
