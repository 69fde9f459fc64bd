import { describe, expect, it } from 'vitest';
import { FakeClock, seededRandom } from '../src/core/index.ts';
import { AdaptiveThrottle, REJECT_PROBABILITY_MAX, WINDOW_BUCKETS } from './adaptive-throttle.ts';

describe('AdaptiveThrottle (SRE book, K = 2)', () => {
  it('sends everything while the server accepts', () => {
    const t = new AdaptiveThrottle(new FakeClock(), seededRandom(1));
    for (let i = 0; i < 1000; i++) {
      expect(t.admit()).toBe(true);
      t.accepted();
    }
    expect(t.rejectProbability()).toBe(0);
  });

  it('when the server takes 10% of requests, the client sends about 2x that and rejects the rest locally', () => {
    const clock = new FakeClock();
    const t = new AdaptiveThrottle(clock, seededRandom(42));
    let sent = 0;
    let accepted = 0;
    for (let i = 0; i < 20_000; i++) {
      if (i % 100 === 0) clock.advance(50);
      if (!t.admit()) continue;
      sent++;
      // The server accepts what reaches it of every tenth attempt (at most 10% of the offered load).
      if (i % 10 === 0) {
        t.accepted();
        accepted++;
      }
    }
    // Of 20,000 attempts 2,000 are accepted; the rule lets through about K × accepts.
    expect(t.rejectProbability()).toBeGreaterThan(0.7);
    expect(sent).toBeLessThan(20_000 * 0.4);
    expect(accepted).toBeGreaterThan(0);
  });

  it('forgets the overload after the window', () => {
    const clock = new FakeClock();
    const t = new AdaptiveThrottle(clock, seededRandom(7));
    for (let i = 0; i < 1000; i++) t.admit();
    expect(t.rejectProbability()).toBe(REJECT_PROBABILITY_MAX);
    clock.advance(WINDOW_BUCKETS * 1000 + 1000);
    expect(t.rejectProbability()).toBe(0);
  });

  it('never locks a client out: with no accept at all it still sends about a fifth of its attempts', () => {
    const clock = new FakeClock();
    const t = new AdaptiveThrottle(clock, seededRandom(3));
    let sent = 0;
    for (let i = 0; i < 10_000; i++) {
      if (i % 100 === 0) clock.advance(100);
      if (t.admit()) sent++;
    }
    expect(t.rejectProbability()).toBe(REJECT_PROBABILITY_MAX);
    // 1 − 0.8 of 10,000, with room for the draws (binomial sd ≈ 40).
    expect(sent).toBeGreaterThan(1_800);
    expect(sent).toBeLessThan(2_300);
  });
});
