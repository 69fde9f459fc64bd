// Proves API-key auth over a real cell: missing or bad keys get 401, keys without the grant get 403 and write nothing, granted keys pass (Bearer or X-Api-Key), and auth null lets everything through.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestCell } from '../helpers/cell.ts';
import type { EdgeqClient } from '../../src/client/index.ts';
import { Authenticator, createGatewayApp, hashApiKey, type GatewayApp } from '../../src/gateway/index.ts';
import { GatewayOnCell } from './gateway-on-cell.ts';

const TOPIC = 'auth-orders';
const KEYS = {
  admin: 'key-admin-0123456789',
  writer: 'key-writer-0123456789',
  reader: 'key-reader-0123456789',
};

let gw: GatewayOnCell;
let cell: TestCell;
let client: EdgeqClient;
let app: GatewayApp;

function keysDoc() {
  const sha = (k: string) => hashApiKey(k).toString('hex');
  return {
    keys: [
      { sha256: sha(KEYS.admin), tenant: 'ops', grants: [{ topic: '*', actions: ['admin', 'read', 'write'] }] },
      { sha256: sha(KEYS.writer), tenant: 'shop', grants: [{ topic: TOPIC, actions: ['write'] }] },
      { sha256: sha(KEYS.reader), tenant: 'analytics', grants: [{ topic: TOPIC, actions: ['read'] }] },
    ],
  };
}

beforeAll(async () => {
  gw = await GatewayOnCell.start({
    auth: Authenticator.fromJson(keysDoc()),
    topics: [{ name: TOPIC, partitions: 1 }],
    adminHeaders: { authorization: `Bearer ${KEYS.admin}` },
    waitReady: false,
  });
  ({ cell, client, app } = gw);
});

afterAll(async () => gw?.close());

async function highWatermark(): Promise<number> {
  const status = await client.admin().cellStatus();
  return status.partitions.find((p) => p.topic === TOPIC)?.highWatermark ?? -1;
}

function produce(headers: Record<string, string>): Promise<Response> {
  return Promise.resolve(
    app.request(`/v1/topics/${TOPIC}/records`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ records: [{ value: 'v' }] }) }),
  );
}

describe('auth', () => {
  it('refuses a missing, malformed or unknown key with 401 and writes nothing', async () => {
    const before = await highWatermark();
    const cases: Record<string, string>[] = [{}, { authorization: 'Basic abc' }, { authorization: 'Bearer nope' }, { 'x-api-key': 'nope' }, { 'x-api-key': KEYS.admin.slice(0, -1) }];
    for (const headers of cases) {
      const res = await produce(headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(await res.json()).toMatchObject({ code: 'UNAUTHENTICATED', status: 401 });
    }
    expect(await highWatermark()).toBe(before);
  });

  it('refuses a key without the grant with 403 and writes nothing', async () => {
    const before = await highWatermark();
    const res = await produce({ 'x-api-key': KEYS.reader });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ code: 'FORBIDDEN' });
    const read = await app.request(`/v1/topics/${TOPIC}/partitions/0/records`, { headers: { 'x-api-key': KEYS.writer } });
    expect(read.status).toBe(403);
    for (const [method, path] of [['GET', '/v1/cell'], ['DELETE', `/v1/topics/${TOPIC}`], ['GET', '/v1/topics/other-topic']] as const) {
      const r = await app.request(path, { method, headers: { authorization: `Bearer ${KEYS.writer}` } });
      expect(r.status).toBe(403);
    }
    const create = await app.request('/v1/topics', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': KEYS.writer }, body: JSON.stringify({ name: 'auth-new', partitions: 1 }) });
    expect(create.status).toBe(403);
    expect(await highWatermark()).toBe(before);
  });

  it('lets granted keys through, by Bearer or X-Api-Key', async () => {
    const res = await produce({ authorization: `Bearer ${KEYS.writer}` });
    expect(res.status).toBe(200);
    const read = await app.request(`/v1/topics/${TOPIC}/partitions/0/records?offset=0`, { headers: { 'x-api-key': KEYS.reader } });
    expect(read.status).toBe(200);
    expect(((await read.json()) as { records: unknown[] }).records.length).toBeGreaterThan(0);
    const list = await app.request('/v1/topics', { headers: { 'x-api-key': KEYS.reader } });
    expect(await list.json()).toEqual({ topics: [TOPIC] });
    expect((await app.request('/v1/cell', { headers: { 'x-api-key': KEYS.admin } })).status).toBe(200);
    expect((await app.request(`/v1/topics/${TOPIC}`, { headers: { 'x-api-key': KEYS.writer } })).status).toBe(200);
  });

  it('keeps the probes open', async () => {
    expect((await app.request('/healthz')).status).toBe(200);
  });

  it('allows everything with auth null', async () => {
    const open = createGatewayApp({ client, auth: null });
    try {
      expect((await open.request('/v1/cell')).status).toBe(200);
    } finally {
      await open.close();
    }
  });

  it('refuses a malformed keys file naming the field', () => {
    expect(() => Authenticator.fromJson({ keys: [{ sha256: 'short', tenant: 't', grants: [] }] })).toThrow(/keys\.0\.sha256/);
  });
});
