// Proves the SimClock fires thousands of timers in (time, creation) order on one FakeClock timer,
// including zero-delay timers set while firing, and never fires a cancelled one.
import { describe, expect, it } from 'vitest';
import { FakeClock, seededRandom } from '../../src/core/index.ts';
import { SimClock } from './sim-clock.ts';

describe('SimClock', () => {
  it('fires in time order, ties in creation order, driven by FakeClock.advance', () => {
    const fake = new FakeClock();
    const clock = new SimClock(fake);
    const random = seededRandom(9);
    const fired: [number, number][] = [];
    const expected: [number, number][] = [];
    for (let i = 0; i < 5000; i++) {
      const delay = Math.floor(random() * 1000);
      expected.push([delay, i]);
      clock.setTimeout(() => fired.push([fake.monotonicMs(), i]), delay);
    }
    expect(fake.pendingTimers()).toBe(1);
    fake.advance(1000);
    expected.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    expect(fired).toEqual(expected);
    expect(clock.pending).toBe(0);
  });

  it('runs zero-delay timers set while firing, at the same instant', () => {
    const clock = new SimClock();
    const order: string[] = [];
    clock.setTimeout(() => {
      order.push(`a@${clock.monotonicMs()}`);
      clock.setTimeout(() => order.push(`b@${clock.monotonicMs()}`), 0);
      clock.setTimeout(() => order.push(`c@${clock.monotonicMs()}`), 5);
    }, 10);
    clock.setTimeout(() => order.push(`d@${clock.monotonicMs()}`), 12);
    clock.advance(20);
    expect(order).toEqual(['a@10', 'b@10', 'd@12', 'c@15']);
  });

  it('does not fire cancelled timers and moves the wall clock with the monotonic one', () => {
    const clock = new SimClock();
    const wall = clock.nowMs();
    let fired = 0;
    const t = clock.setTimeout(() => fired++, 5);
    clock.setTimeout(() => fired++, 7);
    t.cancel();
    clock.advance(10);
    expect(fired).toBe(1);
    expect(clock.nowMs()).toBe(wall + 10);
  });
});
