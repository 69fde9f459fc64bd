// Proves the hybrid logical clock follows wall time, still increases when the wall clock stalls
// or steps back, orders after versions it observed, and that last writer wins on (version, member).
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/core/index.ts';
import { HybridClock, versionWallMs, versionWins } from './hlc.ts';

/** A clock whose wall time can be set freely. */
class SettableClock extends FakeClock {
  wall = 1_700_000_000_000;
  override nowMs(): number {
    return this.wall;
  }
}

describe('HybridClock', () => {
  it('follows wall ms and increases within one ms and when the clock steps back', () => {
    const clock = new SettableClock();
    const h = new HybridClock(clock);
    const a = h.tick();
    expect(a).toBe(1_700_000_000_000_000);
    expect(h.tick()).toBe(a + 1);
    clock.wall -= 5000;
    expect(h.tick()).toBe(a + 2);
    clock.wall += 10_000;
    const b = h.tick();
    expect(versionWallMs(b)).toBe(1_700_000_005_000);
  });

  it('issues integer versions from a clock that reports fractions of a ms', () => {
    const clock = new SettableClock();
    // At this magnitude a tenth of a ms times 1000 rounds to an integer; half a microsecond does not.
    clock.wall = 1_700_000_000_000.0005;
    const v = new HybridClock(clock).tick();
    expect(Number.isSafeInteger(v)).toBe(true);
    expect(versionWallMs(v)).toBe(1_700_000_000_000);
  });

  it('orders later writes after observed versions', () => {
    const clock = new SettableClock();
    const h = new HybridClock(clock);
    const remote = (clock.wall + 3000) * 1000 + 7;
    h.observe(remote);
    h.observe(5);
    expect(h.tick()).toBe(remote + 1);
  });

  it('last writer wins on version, then member', () => {
    expect(versionWins(2, 'a', 1, 'z')).toBe(true);
    expect(versionWins(1, 'b', 1, 'a')).toBe(true);
    expect(versionWins(1, 'a', 1, 'a')).toBe(false);
    expect(versionWins(1, 'a', 2, 'a')).toBe(false);
  });
});
