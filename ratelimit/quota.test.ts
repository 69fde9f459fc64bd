import { describe, expect, it } from 'vitest';
import { parseQuota, quotaKey, resolveQuota, type Quota } from './quota.ts';

const ok = { recordsPerSec: 1000, bytesPerSec: 1_000_000 };

describe('parseQuota', () => {
  it('takes a quota, bursts defaulting to a tenth of a second', () => {
    expect(parseQuota('acme', 'orders', ok)).toEqual({ tenant: 'acme', topic: 'orders', recordsPerSec: 1000, bytesPerSec: 1_000_000, burstRecords: 100, burstBytes: 100_000, scope: 'local' });
    expect(parseQuota('acme', 'orders', { recordsPerSec: 3, bytesPerSec: 1 })).toMatchObject({ burstRecords: 1, burstBytes: 1 });
    expect(parseQuota('*', '*', { ...ok, burstRecords: 5, scope: 'global' }).scope).toBe('global');
  });

  it.each([
    [{ ...ok, recordsPerSec: -1 }, 'recordsPerSec'],
    [{ ...ok, recordsPerSec: 0 }, 'recordsPerSec'],
    [{ ...ok, bytesPerSec: Number.NaN }, 'bytesPerSec'],
    [{ ...ok, bytesPerSec: 1.5 }, 'bytesPerSec'],
    [{ ...ok, bytesPerSec: '100' }, 'bytesPerSec'],
    [{ ...ok, burstBytes: 1e13 }, 'burstBytes'],
    [{ ...ok, burstRecords: null }, 'burstRecords'],
    [{ recordsPerSec: 10 }, 'bytesPerSec'],
    [{ ...ok, rate: 5 }, 'rate'],
    [{ ...ok, scope: 'planet' }, 'scope'],
    [[1, 2], 'body'],
    [null, 'body'],
  ])('refuses %j naming %s', (body, field) => {
    let err: unknown;
    try {
      parseQuota('acme', 'orders', body);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', details: { field } });
  });

  it('refuses names that are not valid', () => {
    expect(() => parseQuota('a b', 'orders', ok)).toThrow(/tenant "a b"/);
    expect(() => parseQuota('acme', 'or/ders', ok)).toThrow(/topic "or\/ders"/);
    expect(() => parseQuota('x'.repeat(65), 'orders', ok)).toThrow(/tenant/);
  });
});

describe('resolveQuota', () => {
  it('most specific first: (tenant, topic), (tenant, *), (*, topic), (*, *)', () => {
    const q = (tenant: string, topic: string): Quota => parseQuota(tenant, topic, ok);
    const all = new Map([q('acme', 'orders'), q('acme', '*'), q('*', 'orders'), q('*', '*')].map((x) => [quotaKey(x.tenant, x.topic), x]));
    expect(resolveQuota(all, 'acme', 'orders')).toMatchObject({ tenant: 'acme', topic: 'orders' });
    expect(resolveQuota(all, 'acme', 'other')).toMatchObject({ tenant: 'acme', topic: '*' });
    expect(resolveQuota(all, 'bob', 'orders')).toMatchObject({ tenant: '*', topic: 'orders' });
    expect(resolveQuota(all, 'bob', 'other')).toMatchObject({ tenant: '*', topic: '*' });
    expect(resolveQuota(new Map(), 'bob', 'other')).toBeUndefined();
  });
});
