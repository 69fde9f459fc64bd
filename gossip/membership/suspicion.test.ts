// Proves the suspicion timer follows memberlist's formulas: the timeout min = mult × max(1, log10 n)
// × interval, Lifeguard's start at max, shrinking with each independent confirmation to min after
// k, the raiser and repeats not counting, and cancel stopping it.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/core/index.ts';
import { dynamicTimeoutMs, Suspicion, suspicionTimeoutMs } from './suspicion.ts';

describe('suspicion timeouts', () => {
  it('computes memberlist suspicionTimeout', () => {
    // memberlist WAN defaults (mult 6, probe 5 s): 30 s up to 10 members, 35.3 s at 15 (issue 12's anchor: 35-212 s).
    expect(suspicionTimeoutMs(6, 3, 5000)).toBe(30_000);
    expect(suspicionTimeoutMs(6, 15, 5000)).toBe(35_282);
    expect(6 * suspicionTimeoutMs(6, 15, 5000)).toBe(211_692);
    expect(suspicionTimeoutMs(3, 200, 500)).toBe(3451);
    expect(suspicionTimeoutMs(4, 1, 1000)).toBe(4000);
  });

  it('shrinks from max to min as log(C + 1) / log(k + 1)', () => {
    expect(dynamicTimeoutMs(0, 3, 1000, 6000)).toBe(6000);
    expect(dynamicTimeoutMs(1, 3, 1000, 6000)).toBe(Math.floor(6000 - (Math.log(2) / Math.log(4)) * 5000));
    expect(dynamicTimeoutMs(3, 3, 1000, 6000)).toBe(1000);
    expect(dynamicTimeoutMs(5, 3, 1000, 6000)).toBe(1000);
    expect(dynamicTimeoutMs(0, 0, 1000, 6000)).toBe(1000);
  });
});

describe('Suspicion', () => {
  it('fires at max without confirmations', () => {
    const clock = new FakeClock();
    let fired = 0;
    new Suspicion(clock, 'a', 2, 1000, 6000, () => fired++);
    clock.advance(5999);
    expect(fired).toBe(0);
    clock.advance(1);
    expect(fired).toBe(1);
  });

  it('fires at min from the start when no confirmation is expected (k < 1)', () => {
    const clock = new FakeClock();
    let fired = 0;
    const s = new Suspicion(clock, 'a', 0, 1000, 6000, () => fired++);
    expect(s.confirm('b')).toBe(false);
    clock.advance(1000);
    expect(fired).toBe(1);
  });

  it('counts each other member once, not the raiser, and reaches min after k', () => {
    const clock = new FakeClock();
    let firedAt = -1;
    const s = new Suspicion(clock, 'a', 2, 1000, 6000, () => (firedAt = clock.monotonicMs()));
    expect(s.confirm('a')).toBe(false);
    clock.advance(500);
    expect(s.confirm('b')).toBe(true);
    expect(s.confirm('b')).toBe(false);
    expect(s.confirmations).toBe(1);
    expect(s.timeoutMs).toBe(Math.floor(6000 - (Math.log(2) / Math.log(3)) * 5000));
    expect(s.confirm('c')).toBe(true);
    expect(s.confirm('d')).toBe(false);
    clock.advance(499);
    expect(firedAt).toBe(-1);
    clock.advance(1);
    expect(firedAt).toBe(1000);
  });

  it('fires at once when a confirmation comes after the shortened timeout already passed', () => {
    const clock = new FakeClock();
    let fired = 0;
    const s = new Suspicion(clock, 'a', 1, 1000, 6000, () => fired++);
    clock.advance(3000);
    s.confirm('b');
    clock.advance(0);
    expect(fired).toBe(1);
  });

  it('does not fire once cancelled', () => {
    const clock = new FakeClock();
    let fired = 0;
    const s = new Suspicion(clock, 'a', 1, 1000, 6000, () => fired++);
    s.cancel();
    clock.advance(10_000);
    expect(fired).toBe(0);
    expect(s.confirm('b')).toBe(false);
  });
});
