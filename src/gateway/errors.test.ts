// Proves errors become RFC 9457 problem+json with the status from the core error table (with written: false when nothing can have been written), that throttling carries Retry-After and 401s a WWW-Authenticate challenge, that unexpected errors do not leak their message, and that the limits are checked at start-up.
import { describe, expect, it } from 'vitest';
import { EdgeqError, ERROR_SPECS } from '../core/index.ts';
import { GATEWAY_LIMITS, problemResponse, problemType, resolveLimits, toProblem } from './index.ts';

describe('problem+json', () => {
  it('takes the status from ERROR_SPECS for every code', () => {
    for (const code of Object.keys(ERROR_SPECS) as (keyof typeof ERROR_SPECS)[]) {
      const p = toProblem(new EdgeqError(code, 'why'));
      expect(p).toMatchObject({ code, status: ERROR_SPECS[code].http, detail: 'why', type: problemType(code), retriable: ERROR_SPECS[code].retriable });
      if (code !== 'QUOTA_EXCEEDED' && code !== 'TEMPORARY_REDUCED_CAPACITY') expect(p.type).toBe(`urn:edgeq:error:${code}`);
      expect(p.title.length).toBeGreaterThan(0);
    }
  });

  it('says written: false only when the error says no record can have been written', () => {
    expect(toProblem(new EdgeqError('ARBITER_UNAVAILABLE', 'no lease', { details: { written: false } }))).toMatchObject({ status: 503, code: 'ARBITER_UNAVAILABLE', written: false });
    expect(toProblem(new EdgeqError('REQUEST_TIMED_OUT', 'maybe', { details: { lastError: 'NOT_ENOUGH_REPLICAS' } })).written).toBeUndefined();
  });

  it('answers 429 with Retry-After, from the hint when there is one', async () => {
    const plain = problemResponse(new EdgeqError('THROTTLED', 'slow down'));
    expect(plain.status).toBe(429);
    expect(plain.headers.get('retry-after')).toBe('1');
    expect(plain.headers.get('content-type')).toBe('application/problem+json');
    const hinted = problemResponse(new EdgeqError('THROTTLED', 'slow down', { details: { retryAfterMs: 2500 } }));
    expect(hinted.headers.get('retry-after')).toBe('3');
    expect(problemResponse(new EdgeqError('NOT_FOUND', 'x')).headers.get('retry-after')).toBeNull();
  });

  it('answers over a limit with the problem types and headers of draft-ietf-httpapi-ratelimit-headers-11', async () => {
    const quota = problemResponse(
      new EdgeqError('QUOTA_EXCEEDED', 'over', { details: { violatedPolicies: ['records'], headers: { 'Retry-After': '2', 'RateLimit-Policy': '"records";q=10;w=1', RateLimit: '"records";r=0;t=1' } } }),
    );
    expect(quota.status).toBe(429);
    expect(quota.headers.get('retry-after')).toBe('2');
    expect(quota.headers.get('ratelimit-policy')).toBe('"records";q=10;w=1');
    expect(quota.headers.get('ratelimit')).toBe('"records";r=0;t=1');
    expect(await quota.json()).toMatchObject({ type: 'https://iana.org/assignments/http-problem-types#quota-exceeded', 'violated-policies': ['records'] });
    const cut = problemResponse(new EdgeqError('TEMPORARY_REDUCED_CAPACITY', 'loaded', { details: { retryAfterMs: 1000 } }));
    expect(cut.status).toBe(503);
    expect(cut.headers.get('retry-after')).toBe('1');
    expect(((await cut.json()) as { type: string }).type).toBe('https://iana.org/assignments/http-problem-types#temporary-reduced-capacity');
  });

  it('answers 401 with a WWW-Authenticate challenge (RFC 9110), invalid_token when a key was given', () => {
    const missing = problemResponse(new EdgeqError('UNAUTHENTICATED', 'no key', { details: { presented: false } }));
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="edgeq"');
    const bad = problemResponse(new EdgeqError('UNAUTHENTICATED', 'bad key', { details: { presented: true } }));
    expect(bad.headers.get('www-authenticate')).toMatch(/^Bearer realm="edgeq", error="invalid_token"/);
    expect(problemResponse(new EdgeqError('FORBIDDEN', 'x')).headers.get('www-authenticate')).toBeNull();
  });

  it('hides the message of anything that is not an EdgeqError', async () => {
    const res = problemResponse(new Error('secret path /etc/x'));
    expect(res.status).toBe(500);
    const body = (await res.json()) as { code: string; detail: string };
    expect(body.code).toBe('UNKNOWN');
    expect(body.detail).not.toContain('secret');
  });
});

describe('limits', () => {
  it('fills defaults and refuses bounds that do not fit together', () => {
    expect(resolveLimits()).toEqual(GATEWAY_LIMITS);
    expect(() => resolveLimits({ recordBytesMax: 10, bodyBytesMax: 5 })).toThrow(/recordBytesMax/);
    expect(() => resolveLimits({ waitMsMax: -1 })).toThrow(/waitMsMax/);
    expect(() => resolveLimits({ produceBatchBytesMax: 100 })).toThrow(/produceBatchBytesMax/);
  });
});
