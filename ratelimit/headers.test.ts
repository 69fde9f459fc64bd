import { describe, expect, it } from 'vitest';
import { rateLimitHeaders, retryAfterSec } from './headers.ts';

describe('RateLimit headers (draft-ietf-httpapi-ratelimit-headers-11)', () => {
  it('writes the policy and the state as structured-field lists', () => {
    expect(rateLimitHeaders([{ name: 'tenant', quota: 1000, windowSec: 1, remaining: 0, resetSec: 0.2 }])).toEqual({
      'RateLimit-Policy': '"tenant";q=1000;w=1',
      RateLimit: '"tenant";r=0;t=1',
    });
    const two = rateLimitHeaders([
      { name: 'tenant', quota: 1000, windowSec: 1, remaining: 12.7, resetSec: 0 },
      { name: 'topic "x"', quota: 50, windowSec: 1, remaining: -3, resetSec: 2 },
    ]);
    expect(two['RateLimit-Policy']).toBe('"tenant";q=1000;w=1, "topic \\"x\\"";q=50;w=1');
    expect(two.RateLimit).toBe('"tenant";r=12;t=0, "topic \\"x\\"";r=0;t=2');
  });

  it('Retry-After: at least the throttle, at most 1.5x, never 0', () => {
    expect(retryAfterSec(0, () => 0)).toBe(1);
    expect(retryAfterSec(2000, () => 0)).toBe(2);
    expect(retryAfterSec(2000, () => 0.999)).toBe(3);
    for (let i = 0; i < 100; i++) {
      const s = retryAfterSec(4000);
      expect(s).toBeGreaterThanOrEqual(4);
      expect(s).toBeLessThanOrEqual(6);
    }
  });
});
