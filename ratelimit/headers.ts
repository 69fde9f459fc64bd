/**
 * The answers over a limit, as HTTP headers: `RateLimit-Policy` and `RateLimit` as
 * draft-ietf-httpapi-ratelimit-headers-11 writes them (structured-field lists of named policies:
 * `"tenant";q=1000;w=1` is a quota of 1000 per 1-second window, `"tenant";r=0;t=1` has 0 left and
 * resets in 1 s), and `Retry-After` in whole seconds with jitter, so refused clients do not all
 * come back in the same second.
 */

/** The draft these headers follow (docs name it too). */
export const RATELIMIT_HEADERS_DRAFT = 'draft-ietf-httpapi-ratelimit-headers-11';

export interface PolicyState {
  /** The policy's name (a structured-field string): the quota's scope, e.g. "tenant". */
  name: string;
  /** Quota units per window. */
  quota: number;
  /** Window in seconds. */
  windowSec: number;
  /** Units left now (≥ 0). */
  remaining: number;
  /** Seconds until the units are back (≥ 0, rounded up). */
  resetSec: number;
}

/** A structured-field string (RFC 9651 §3.3.3): quotes and backslashes escaped. */
function sfString(s: string): string {
  return `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

export function rateLimitHeaders(policies: readonly PolicyState[]): { 'RateLimit-Policy': string; RateLimit: string } {
  return {
    'RateLimit-Policy': policies.map((p) => `${sfString(p.name)};q=${Math.floor(p.quota)};w=${Math.max(1, Math.ceil(p.windowSec))}`).join(', '),
    RateLimit: policies.map((p) => `${sfString(p.name)};r=${Math.max(0, Math.floor(p.remaining))};t=${Math.max(0, Math.ceil(p.resetSec))}`).join(', '),
  };
}

/** Retry-After (seconds, ≥ 1) for a throttle of `throttleMs`: that long plus up to 50% jitter. */
export function retryAfterSec(throttleMs: number, random: () => number = Math.random): number {
  return Math.max(1, Math.ceil((throttleMs * (1 + 0.5 * random())) / 1000));
}
