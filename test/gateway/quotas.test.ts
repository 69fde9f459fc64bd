// Proves the gateway's quotas against a real 3-broker cell: a produce over quota answers 429
// problem+json of type quota-exceeded with Retry-After and the RateLimit fields
// (draft-ietf-httpapi-ratelimit-headers-11) and writes nothing (no high watermark moves); a body
// whose size alone is over the bytes budget is refused before it is parsed; a quota changed
// behind the gateway (another gateway, the CLI) applies within one refresh interval; bad quota
// bodies and names answer 400 naming the field and change nothing; tenants come from API keys and
// managing quotas needs the admin grant.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { Authenticator } from '../../src/gateway/index.ts';
import { MemoryQuotaAdmin, QuotaEnforcer, parseQuota } from '../../ratelimit/index.ts';
import { eventually } from '../helpers/cell.ts';
import { GatewayOnCell } from './gateway-on-cell.ts';

const TOPIC = 'quota-orders';
const REFRESH_MS = 300;
const ADMIN = { authorization: 'Bearer admin-key' };
const ACME = { authorization: 'Bearer acme-key' };
const sha = (k: string) => createHash('sha256').update(k).digest('hex');

let gw: GatewayOnCell;
let admin: MemoryQuotaAdmin;
let quotas: QuotaEnforcer;

beforeAll(async () => {
  admin = new MemoryQuotaAdmin();
  quotas = new QuotaEnforcer({ admin, refreshMs: REFRESH_MS });
  await quotas.start();
  const auth = Authenticator.fromJson({
    keys: [
      { sha256: sha('admin-key'), tenant: 'ops', grants: [{ topic: '*', actions: ['read', 'write', 'admin'] }] },
      { sha256: sha('acme-key'), tenant: 'acme', grants: [{ topic: '*', actions: ['read', 'write'] }] },
      { sha256: sha('bob-key'), tenant: 'bob', grants: [{ topic: '*', actions: ['read', 'write'] }] },
    ],
  });
  gw = await GatewayOnCell.start({ auth, quotas, adminHeaders: ADMIN, topics: [{ name: TOPIC, partitions: 2 }] });
});

afterAll(async () => {
  quotas?.close();
  await gw?.close();
});

const req = (path: string, init: RequestInit & { headers?: Record<string, string> } = {}) => Promise.resolve(gw.app.request(path, init));
const put = (tenant: string, topic: string, body: unknown, headers = ADMIN) =>
  req(`/v1/quotas/${tenant}/${topic}`, { method: 'PUT', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
const produce = (n: number, headers: Record<string, string> = ACME, value = 'v') =>
  req(`/v1/topics/${TOPIC}/records?acks=all`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ records: Array.from({ length: n }, () => ({ value })) }) });

async function watermarks(): Promise<number[]> {
  const status = await gw.client.admin().cellStatus();
  return status.partitions.filter((p) => p.topic === TOPIC).map((p) => p.highWatermark);
}

async function listed(): Promise<unknown> {
  return ((await (await req('/v1/quotas', { headers: ADMIN })).json()) as { quotas: unknown }).quotas;
}

describe('quotas at the gateway', () => {
  it('PUT creates (201) and replaces (200); GET lists and reads one; DELETE removes (204, then 404)', async () => {
    const created = await put('acme', 'other', { recordsPerSec: 100, bytesPerSec: 10_000 });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ tenant: 'acme', topic: 'other', recordsPerSec: 100, bytesPerSec: 10_000, burstRecords: 10, burstBytes: 1000, scope: 'local', regionRecordsPerSec: 100 });
    expect((await put('acme', 'other', { recordsPerSec: 200, bytesPerSec: 10_000, burstRecords: 50 })).status).toBe(200);
    expect(await (await req('/v1/quotas/acme/other', { headers: ADMIN })).json()).toMatchObject({ recordsPerSec: 200, burstRecords: 50 });
    expect(await admin.listQuotas()).toEqual([expect.objectContaining({ tenant: 'acme', topic: 'other', recordsPerSec: 200 })]);
    expect((await req('/v1/quotas/acme/other', { method: 'DELETE', headers: ADMIN })).status).toBe(204);
    const again = await req('/v1/quotas/acme/other', { method: 'DELETE', headers: ADMIN });
    expect(again.status).toBe(404);
    expect((await req('/v1/quotas/acme/other', { headers: ADMIN })).status).toBe(404);
    expect(await listed()).toEqual([]);
  });

  it('over quota: 429 quota-exceeded with Retry-After and RateLimit fields, and nothing written', async () => {
    expect((await put('acme', TOPIC, { recordsPerSec: 1, bytesPerSec: 1_000_000, burstRecords: 5 })).status).toBe(201);
    try {
      const ok = await produce(5);
      expect(ok.status).toBe(200);
      expect(ok.headers.get('ratelimit-policy')).toBe('"topic";q=1;w=1, "topic-bytes";q=1000000;w=1');
      expect(ok.headers.get('ratelimit')).toMatch(/^"topic";r=0;t=0, "topic-bytes";r=\d+;t=0$/);
      const before = await watermarks();
      const refused = await produce(2);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('content-type')).toContain('application/problem+json');
      const retryAfter = Number(refused.headers.get('retry-after'));
      // The bucket is 0 and 2 records need ~2 s at 1/s; with up to 50% jitter, 2..3 s.
      expect(retryAfter).toBeGreaterThanOrEqual(2);
      expect(retryAfter).toBeLessThanOrEqual(3);
      expect(refused.headers.get('ratelimit-policy')).toContain('"topic";q=1;w=1');
      expect(refused.headers.get('ratelimit')).toMatch(/^"topic";r=0;t=[12], /);
      const problem = (await refused.json()) as Record<string, unknown>;
      expect(problem).toMatchObject({ status: 429, code: 'QUOTA_EXCEEDED', type: 'https://iana.org/assignments/http-problem-types#quota-exceeded', retriable: true, 'violated-policies': ['topic'] });
      expect(String(problem['detail'])).toContain('acme');
      expect(await watermarks()).toEqual(before);
      // Another tenant is not limited by acme's quota.
      expect((await produce(3, { authorization: 'Bearer bob-key' })).status).toBe(200);
    } finally {
      await req(`/v1/quotas/acme/${TOPIC}`, { method: 'DELETE', headers: ADMIN });
    }
  });

  it('a body whose size alone exceeds the bytes budget is refused before it is read or parsed', async () => {
    expect((await put('acme', TOPIC, { recordsPerSec: 1000, bytesPerSec: 100, burstBytes: 100 })).status).toBe(201);
    try {
      expect((await produce(1, ACME, 'x'.repeat(60))).status).toBe(200);
      const before = await watermarks();
      // Not JSON at all: parsed, it would be a 400; refused on its size, it is a 429.
      const garbage = '{'.repeat(80);
      const res = await req(`/v1/topics/${TOPIC}/records`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(garbage.length), ...ACME }, body: garbage });
      expect(res.status).toBe(429);
      expect(await res.json()).toMatchObject({ code: 'QUOTA_EXCEEDED', 'violated-policies': ['topic-bytes'] });
      expect(await watermarks()).toEqual(before);
    } finally {
      await req(`/v1/quotas/acme/${TOPIC}`, { method: 'DELETE', headers: ADMIN });
    }
  });

  it('a quota changed behind the gateway applies within one refresh interval', async () => {
    expect((await produce(3)).status).toBe(200);
    const t0 = performance.now();
    await admin.putQuota(parseQuota('acme', '*', { recordsPerSec: 1, bytesPerSec: 1_000_000, burstRecords: 1 }));
    try {
      await eventually(async () => (await produce(2)).status === 429, 5_000, 'the new quota in force');
      // One refresh interval, plus the time of the produce attempts in between (each well under 1 s).
      expect(performance.now() - t0).toBeLessThan(REFRESH_MS + 2_000);
      await admin.deleteQuota('acme', '*');
      await eventually(async () => (await produce(2)).status === 200, 5_000, 'the quota gone');
    } finally {
      await admin.deleteQuota('acme', '*');
    }
  });

  it('wildcards in the path: * tenant and * topic', async () => {
    expect((await put('*', '*', { recordsPerSec: 1_000_000, bytesPerSec: 1_000_000_000 })).status).toBe(201);
    expect(await listed()).toEqual([expect.objectContaining({ tenant: '*', topic: '*' })]);
    expect((await req('/v1/quotas/%2A/%2A', { method: 'DELETE', headers: ADMIN })).status).toBe(204);
  });

  it('bad quota bodies and names: 400 naming the field, nothing changed', async () => {
    expect((await put('acme', TOPIC, { recordsPerSec: 10, bytesPerSec: 1000 })).status).toBe(201);
    const before = await listed();
    const cases: [string, string, unknown, string][] = [
      ['acme', TOPIC, { recordsPerSec: -1, bytesPerSec: 10 }, 'recordsPerSec'],
      ['acme', TOPIC, { recordsPerSec: 0, bytesPerSec: 10 }, 'recordsPerSec'],
      ['acme', TOPIC, { recordsPerSec: 1.5, bytesPerSec: 10 }, 'recordsPerSec'],
      ['acme', TOPIC, { recordsPerSec: 10, bytesPerSec: 1e13 }, 'bytesPerSec'],
      ['acme', TOPIC, { recordsPerSec: 10, bytesPerSec: '10' }, 'bytesPerSec'],
      ['acme', TOPIC, { recordsPerSec: 10, bytesPerSec: null }, 'bytesPerSec'],
      ['acme', TOPIC, { recordsPerSec: 10, bytesPerSec: 10, burstRecords: 0 }, 'burstRecords'],
      ['acme', TOPIC, { recordsPerSec: 10, bytesPerSec: 10, burstBytes: 2e12 }, 'burstBytes'],
      ['acme', TOPIC, { bytesPerSec: 10 }, 'recordsPerSec'],
      ['acme', TOPIC, { recordsPerSec: 10, bytesPerSec: 10, weight: 2 }, 'weight'],
      ['acme', TOPIC, { recordsPerSec: 10, bytesPerSec: 10, scope: 'planet' }, 'scope'],
      ['bad%20name', TOPIC, { recordsPerSec: 10, bytesPerSec: 10 }, 'tenant'],
      ['acme', 'no%2Fslash%3F', { recordsPerSec: 10, bytesPerSec: 10 }, 'topic'],
      ['t'.repeat(65), TOPIC, { recordsPerSec: 10, bytesPerSec: 10 }, 'tenant'],
    ];
    for (const [tenant, topic, body, field] of cases) {
      const res = await put(tenant, topic, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(await res.json(), JSON.stringify(body)).toMatchObject({ code: 'INVALID_ARGUMENT', field });
    }
    // Not JSON, and the wrong media type.
    expect((await put('acme', TOPIC, 'recordsPerSec=1')).status).toBe(400);
    const text = await req(`/v1/quotas/acme/${TOPIC}`, { method: 'PUT', headers: { 'content-type': 'text/plain', ...ADMIN }, body: '{}' });
    expect(text.status).toBe(415);
    expect(await listed()).toEqual(before);
    expect((await req(`/v1/quotas/acme/${TOPIC}`, { method: 'DELETE', headers: ADMIN })).status).toBe(204);
  });

  it('managing quotas needs the admin grant; with no key, 401', async () => {
    const res = await put('acme', TOPIC, { recordsPerSec: 1_000_000, bytesPerSec: 1_000_000 }, ACME);
    expect(res.status).toBe(403);
    expect((await req('/v1/quotas', { headers: ACME })).status).toBe(403);
    expect((await req(`/v1/quotas/acme/${TOPIC}`, { method: 'DELETE', headers: ACME })).status).toBe(403);
    expect((await req('/v1/quotas')).status).toBe(401);
    expect(await admin.listQuotas()).toEqual([]);
  });
});
