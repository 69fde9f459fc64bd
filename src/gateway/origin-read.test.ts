// Proves the gateway's reads of a global topic show each record's origin: a record applied from
// another region with that region and its origin offset, one written here with the gateway's
// region and its own offset, in partition reads, SSE streams and group member polls; records of
// a local topic carry no origin fields.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../broker/index.ts';
import { createClient, type EdgeqClient } from '../client/index.ts';
import { buildBatch } from '../log/index.ts';
import { Acks, errorOf } from '../protocol/index.ts';
import { RawClient, cleanupTempDirs, tempDir } from '../testing/index.ts';
import { createGatewayApp, type GatewayApp } from './index.ts';

const REGION = 'eu-west';
let broker: Broker;
let client: EdgeqClient;
let app: GatewayApp;

type Rec = { offset: number; value: string; originRegion?: string; originOffset?: number };
const view = (r: Rec) => [r.value, r.offset, r.originRegion, r.originOffset];

beforeAll(async () => {
  broker = await Broker.start({ dataDir: await tempDir(), port: 0, region: REGION, group: { initialRebalanceDelayMs: 0, sessionTimeoutMsMin: 100 } });
  client = createClient({ brokers: [`127.0.0.1:${broker.port}`] });
  app = createGatewayApp({ client, region: REGION });
  await client.admin().createTopics([
    { name: 'geo', partitions: 1, config: { scope: 'global' } },
    { name: 'plain', partitions: 1 },
  ]);
  for (const topic of ['geo', 'plain']) {
    const res = await app.request(`/v1/topics/${topic}/records?acks=all`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ records: [{ value: 'here', partition: 0 }] }) });
    expect(res.status).toBe(200);
  }
  const raw = await RawClient.connect(broker.port);
  try {
    const records = await buildBatch([{ value: 'there' }], { origin: { region: 'us-east', offset: 40 } });
    const r = await raw.call('Produce', { acks: Acks.ALL, timeoutMs: 5000, topics: [{ name: 'geo', partitions: [{ partition: 0, records }] }] });
    expect(errorOf(r.topics[0]!.partitions[0]!.error)).toBeNull();
  } finally {
    raw.close();
  }
});

afterAll(async () => {
  await app?.close();
  await client?.close();
  await broker?.close();
  await cleanupTempDirs();
});

describe('gateway reads of a global topic', () => {
  it('partition reads carry originRegion and originOffset (own writes: this region and the offset)', async () => {
    const res = await app.request('/v1/topics/geo/partitions/0/records?offset=0&maxRecords=10');
    expect(res.status).toBe(200);
    const body = (await res.json()) as { records: Rec[] };
    expect(body.records.map(view)).toEqual([
      ['here', 0, REGION, 0],
      ['there', 1, 'us-east', 40],
    ]);
    const plain = (await (await app.request('/v1/topics/plain/partitions/0/records?offset=0')).json()) as { records: Rec[] };
    expect(plain.records).toHaveLength(1);
    expect(Object.keys(plain.records[0]!)).not.toContain('originRegion');
    expect(Object.keys(plain.records[0]!)).not.toContain('originOffset');
  });

  it('SSE stream events carry them too', async () => {
    const res = await app.request('/v1/topics/geo/partitions/0/stream?offset=0');
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const deadline = Date.now() + 10_000;
    try {
      while ((text.match(/^data:/gm) ?? []).length < 2 && Date.now() < deadline) {
        const { done, value } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
    const events = [...text.matchAll(/^data: ?(.*)$/gm)].map((m) => JSON.parse(m[1]!) as Rec);
    expect(events.map(view)).toEqual([
      ['here', 0, REGION, 0],
      ['there', 1, 'us-east', 40],
    ]);
  });

  it('group member polls carry them too', async () => {
    const join = await app.request('/v1/groups/geo-g/members', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ topics: ['geo'], fromBeginning: true }) });
    expect(join.status).toBe(201);
    const { memberId } = (await join.json()) as { memberId: string };
    const got: Rec[] = [];
    for (let i = 0; i < 40 && got.length < 2; i++) {
      const res = await app.request(`/v1/groups/geo-g/members/${memberId}/records?waitMs=250`);
      expect(res.status).toBe(200);
      got.push(...((await res.json()) as { records: Rec[] }).records);
    }
    expect(got.map(view)).toEqual([
      ['here', 0, REGION, 0],
      ['there', 1, 'us-east', 40],
    ]);
  });
});
