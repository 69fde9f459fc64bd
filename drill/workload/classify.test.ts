// Proves the produce-outcome rule: 200 is acked, the quota's 429 and the limiter's 503 are retried after Retry-After, other 4xx failed, other 5xx, timeouts and lost connections indeterminate, a refused connection failed.
import { describe, expect, it } from 'vitest';
import { classifyProduce, retryAfterMs, RETRY_AFTER_MS_DEFAULT, RETRY_AFTER_MS_MAX } from './classify.ts';
import type { HttpAnswer } from './http.ts';

const res = (status: number, body: unknown, headers: Record<string, string> = {}): HttpAnswer => ({ kind: 'response', status, headers: new Headers(headers), body });
const NOW = 1_700_000_000_000;

describe('classifyProduce', () => {
  it('a 200 with an offset is acked; a 200 without one is indeterminate', () => {
    expect(classifyProduce(res(200, { offsets: [{ partition: 2, offset: 41 }] }), NOW)).toEqual({ kind: 'acked', offset: 41, partition: 2 });
    expect(classifyProduce(res(200, { offsets: [] }), NOW)).toEqual({ kind: 'indeterminate', code: 'BAD_ANSWER' });
    expect(classifyProduce(res(200, null), NOW)).toEqual({ kind: 'indeterminate', code: 'BAD_ANSWER' });
  });

  it('429 QUOTA_EXCEEDED and 503 TEMPORARY_REDUCED_CAPACITY are retried after their Retry-After', () => {
    expect(classifyProduce(res(429, { code: 'QUOTA_EXCEEDED' }, { 'retry-after': '2' }), NOW)).toEqual({ kind: 'retry', code: 'QUOTA_EXCEEDED', retryAfterMs: 2000 });
    expect(classifyProduce(res(503, { code: 'TEMPORARY_REDUCED_CAPACITY' }, { 'retry-after': '1' }), NOW)).toEqual({ kind: 'retry', code: 'TEMPORARY_REDUCED_CAPACITY', retryAfterMs: 1000 });
    expect(classifyProduce(res(429, { code: 'THROTTLED' }), NOW)).toEqual({ kind: 'retry', code: 'THROTTLED', retryAfterMs: RETRY_AFTER_MS_DEFAULT });
  });

  it('other 4xx are failed with their problem code (or the status)', () => {
    expect(classifyProduce(res(400, { code: 'INVALID_ARGUMENT' }), NOW)).toEqual({ kind: 'failed', code: 'INVALID_ARGUMENT' });
    expect(classifyProduce(res(404, { code: 'UNKNOWN_TOPIC_OR_PARTITION' }), NOW)).toEqual({ kind: 'failed', code: 'UNKNOWN_TOPIC_OR_PARTITION' });
    // A 429 whose code is not the quota's is a plain refusal (e.g. a read slot), not a retry.
    expect(classifyProduce(res(429, { code: 'QUEUE_FULL' }), NOW)).toEqual({ kind: 'failed', code: 'QUEUE_FULL' });
    expect(classifyProduce(res(413, 'not json'), NOW)).toEqual({ kind: 'failed', code: 'HTTP_413' });
  });

  it('a 5xx that says written: false failed (nothing can have been written); other 5xx are indeterminate', () => {
    expect(classifyProduce(res(503, { code: 'ARBITER_UNAVAILABLE', written: false }), NOW)).toEqual({ kind: 'failed', code: 'ARBITER_UNAVAILABLE' });
    expect(classifyProduce(res(503, { code: 'ARBITER_UNAVAILABLE' }), NOW)).toEqual({ kind: 'indeterminate', code: 'ARBITER_UNAVAILABLE' });
    expect(classifyProduce(res(504, { code: 'GEO_TIMEOUT' }), NOW)).toEqual({ kind: 'indeterminate', code: 'GEO_TIMEOUT' });
    expect(classifyProduce(res(503, { code: 'NOT_ENOUGH_REPLICAS' }), NOW)).toEqual({ kind: 'indeterminate', code: 'NOT_ENOUGH_REPLICAS' });
    expect(classifyProduce(res(502, null), NOW)).toEqual({ kind: 'indeterminate', code: 'HTTP_502' });
  });

  it('a timeout or a lost connection is indeterminate; a refused connection failed', () => {
    expect(classifyProduce({ kind: 'timeout' }, NOW)).toEqual({ kind: 'indeterminate', code: 'TIMEOUT' });
    expect(classifyProduce({ kind: 'network', code: 'ECONNRESET', connected: true }, NOW)).toEqual({ kind: 'indeterminate', code: 'CONNECTION_LOST' });
    expect(classifyProduce({ kind: 'network', code: 'ECONNREFUSED', connected: false }, NOW)).toEqual({ kind: 'failed', code: 'CONNECTION_REFUSED' });
  });
});

describe('retryAfterMs', () => {
  it('reads delta-seconds and HTTP dates, clamps to [0, RETRY_AFTER_MS_MAX], defaults when absent or bad', () => {
    expect(retryAfterMs('3', NOW)).toBe(3000);
    expect(retryAfterMs(new Date(NOW + 4000).toUTCString(), NOW)).toBe(4000);
    expect(retryAfterMs(new Date(NOW - 4000).toUTCString(), NOW)).toBe(0);
    expect(retryAfterMs('3600', NOW)).toBe(RETRY_AFTER_MS_MAX);
    expect(retryAfterMs(null, NOW)).toBe(RETRY_AFTER_MS_DEFAULT);
    expect(retryAfterMs('soon', NOW)).toBe(RETRY_AFTER_MS_DEFAULT);
  });
});
