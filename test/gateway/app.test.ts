// Proves every gateway route answers its happy path against a real 3-broker cell, and that every refused request answers the right problem+json status and code without moving any high watermark.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestCell } from '../helpers/cell.ts';
import { createClient, type EdgeqClient } from '../../src/client/index.ts';
import { buildBatch, readBatchHeader, recomputeCrc } from '../../src/log/index.ts';
import { Acks, decodeBody, encodeMessage, type ProduceResponse } from '../../src/protocol/index.ts';
import { createGatewayApp, type GatewayApp } from '../../src/gateway/index.ts';
import { GatewayOnCell } from './gateway-on-cell.ts';

const LIMITS = { bodyBytesMax: 64 * 1024, recordBytesMax: 4 * 1024, waitMsMax: 5_000, recordsMax: 1_000 };
const TOPIC = 'gw-orders';

let gw: GatewayOnCell;
let cell: TestCell;
let client: EdgeqClient;
let app: GatewayApp;

beforeAll(async () => {
  gw = await GatewayOnCell.start({ limits: LIMITS, topics: [{ name: TOPIC, partitions: 2, config: { 'retention.ms': '600000' } }] });
  ({ cell, client, app } = gw);
});

afterAll(async () => gw?.close());

function postJson(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return Promise.resolve(app.request(path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) }));
}

/** High watermarks of TOPIC's partitions, as the leaders report them. */
async function watermarks(): Promise<number[]> {
  const status = await client.admin().cellStatus();
  return status.partitions.filter((p) => p.topic === TOPIC).map((p) => p.highWatermark);
}

/** Sends a request that must be refused, and checks status, code, content type and that nothing was written. */
async function expectRefused(send: () => Promise<Response> | Response, status: number, code: string): Promise<void> {
  const before = await watermarks();
  const res = await send();
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toContain('application/problem+json');
  const problem = (await res.json()) as { code: string; status: number; type: string; title: string; detail: string; retriable: boolean };
  expect(problem).toMatchObject({ code, status, type: `urn:edgeq:error:${code}` });
  expect(typeof problem.detail).toBe('string');
  expect(await watermarks()).toEqual(before);
  // A write still in flight would land before a marker sent now through the same producer: each
  // marker landing exactly at the old high watermark proves nothing was written in between.
  const markers = await postJson(`/v1/topics/${TOPIC}/records?acks=all`, { records: before.map((_, partition) => ({ value: 'marker', partition })) });
  const { offsets } = (await markers.json()) as { offsets: { partition: number; offset: number }[] };
  expect(offsets.map((o) => o.offset)).toEqual(before);
}

describe('health and cell', () => {
  it('answers /healthz, /readyz and /v1/cell', async () => {
    expect(await (await app.request('/healthz')).json()).toEqual({ status: 'ok' });
    expect((await app.request('/readyz')).status).toBe(200);
    const cellRes = await app.request('/v1/cell');
    expect(cellRes.status).toBe(200);
    const status = (await cellRes.json()) as { brokers: { id: number; alive: boolean }[]; partitions: { topic: string }[] };
    expect(status.brokers.map((b) => b.id)).toEqual([1, 2, 3]);
    expect(status.partitions.filter((p) => p.topic === TOPIC)).toHaveLength(2);
  });

  it('answers /readyz 503 when the cell does not answer', async () => {
    const deadClient = createClient({ brokers: ['127.0.0.1:1'], connectTimeoutMs: 200, retry: { retriesMax: 0, retryTimeMsMax: 500 } });
    const dead = createGatewayApp({ client: deadClient });
    try {
      const res = await dead.request('/readyz');
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ code: 'BROKER_NOT_AVAILABLE' });
      expect((await dead.request('/healthz')).status).toBe(200);
    } finally {
      await dead.close();
      await deadClient.close();
    }
  });

  it('answers unknown routes with a NOT_FOUND problem', async () => {
    const res = await app.request('/v2/nothing');
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('topics', () => {
  it('creates, lists, describes and deletes a topic; 409 on a duplicate, 404 when gone', async () => {
    const created = await postJson('/v1/topics', { name: 'gw-tmp', partitions: 3, replicationFactor: 3 });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ name: 'gw-tmp', replicationFactor: 3 });
    const dup = await postJson('/v1/topics', { name: 'gw-tmp', partitions: 3, replicationFactor: 3 });
    expect(dup.status).toBe(409);
    expect(await dup.json()).toMatchObject({ code: 'TOPIC_ALREADY_EXISTS' });
    expect(((await (await app.request('/v1/topics')).json()) as { topics: string[] }).topics).toEqual(expect.arrayContaining([TOPIC, 'gw-tmp']));
    const described = (await (await app.request('/v1/topics/gw-tmp')).json()) as { partitions: unknown[]; config: Record<string, string> };
    expect(described.partitions).toHaveLength(3);
    expect((await app.request('/v1/topics/gw-tmp', { method: 'DELETE' })).status).toBe(204);
    const gone = await app.request('/v1/topics/gw-tmp');
    expect(gone.status).toBe(404);
    expect(await gone.json()).toMatchObject({ code: 'UNKNOWN_TOPIC_OR_PARTITION' });
    expect((await app.request('/v1/topics/gw-tmp', { method: 'DELETE' })).status).toBe(404);
  });

  it('refuses bad topic bodies', async () => {
    for (const body of [{ partitions: 1 }, { name: 'x', partitions: 0 }, { name: 'x', partitions: 1, replicationFactor: 'three' }]) {
      const res = await postJson('/v1/topics', body);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    const text = await app.request('/v1/topics', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
    expect(text.status).toBe(415);
  });
});

describe('produce and read', () => {
  it('produces JSON records in order and reads them back', async () => {
    const res = await postJson(`/v1/topics/${TOPIC}/records?acks=all`, {
      records: [
        { key: 'k1', value: 'one', headers: { h: 'v' }, partition: 0 },
        { key: 'k2', value: 'two', partition: 1 },
        { key: 'k3', value: 'three', partition: 0 },
      ],
    });
    expect(res.status).toBe(200);
    const { offsets } = (await res.json()) as { offsets: { partition: number; offset: number }[] };
    expect(offsets.map((o) => o.partition)).toEqual([0, 1, 0]);
    expect(offsets[2]!.offset).toBe(offsets[0]!.offset + 1);

    const read = await app.request(`/v1/topics/${TOPIC}/partitions/0/records?offset=${offsets[0]!.offset}&maxRecords=10&waitMs=1000`);
    expect(read.status).toBe(200);
    const body = (await read.json()) as { records: { offset: number; key: string; value: string; headers: Record<string, string>; timestamp: number }[]; nextOffset: number; highWatermark: number };
    expect(body.records.map((r) => r.value)).toEqual(['one', 'three']);
    expect(body.records[0]).toMatchObject({ key: 'k1', headers: { h: 'v' } });
    expect(body.records[0]!.timestamp).toBeGreaterThan(0);
    expect(body.nextOffset).toBe(offsets[2]!.offset + 1);
    expect(body.highWatermark).toBe(body.nextOffset);
  });

  it('produces a body larger than the topic takes in one batch (max.message.bytes): the batch is split, records in order', async () => {
    const small = 'gw-small-batches';
    expect((await postJson('/v1/topics', { name: small, partitions: 1, replicationFactor: 3, config: { 'max.message.bytes': '2048' } })).status).toBe(201);
    const values = Array.from({ length: 120 }, (_, i) => `${i}-${'s'.repeat(90)}`);
    const res = await postJson(`/v1/topics/${small}/records?acks=all`, { records: values.map((value) => ({ value, partition: 0 })) });
    expect(res.status).toBe(200);
    const { offsets } = (await res.json()) as { offsets: { offset: number }[] };
    expect(offsets.map((o) => o.offset)).toEqual(values.map((_, i) => i));
    const read = await app.request(`/v1/topics/${small}/partitions/0/records?offset=0&maxRecords=500&waitMs=1000`);
    const body = (await read.json()) as { records: { value: string }[]; highWatermark: number };
    expect(body.highWatermark).toBe(values.length);
    expect(body.records.map((r) => r.value)).toEqual(values);
  });

  it('produces base64 values, acks=1 and acks=0, and partitions keyed records itself', async () => {
    const bin = Buffer.from([0, 1, 2, 255]);
    const res = await postJson(`/v1/topics/${TOPIC}/records?acks=1`, { valueEncoding: 'base64', records: [{ key: 'b', value: bin.toString('base64'), partition: 1 }] });
    expect(res.status).toBe(200);
    const [o] = ((await res.json()) as { offsets: { partition: number; offset: number }[] }).offsets;
    const read = await app.request(`/v1/topics/${TOPIC}/partitions/1/records?offset=${o!.offset}&maxRecords=1&valueEncoding=base64`);
    expect(((await read.json()) as { records: { value: string }[] }).records[0]!.value).toBe(bin.toString('base64'));
    const keyed = await postJson(`/v1/topics/${TOPIC}/records?acks=0`, { records: [{ key: 'any', value: 'v' }, { key: 'any', value: 'w' }] });
    expect(keyed.status).toBe(200);
    const unacked = ((await keyed.json()) as { offsets: { partition: number; offset: number }[] }).offsets;
    // Same key, same partition; no broker answer, so no offsets.
    expect(unacked[0]!.partition).toBe(unacked[1]!.partition);
    expect(unacked.map((x) => x.offset)).toEqual([-1, -1]);
  });

  it('produces one raw record with application/octet-stream', async () => {
    const res = await app.request(`/v1/topics/${TOPIC}/records`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream', 'x-edgeq-key': 'raw-key', 'x-edgeq-partition': '1' },
      body: new Uint8Array(Buffer.from('raw bytes')),
    });
    expect(res.status).toBe(200);
    const [o] = ((await res.json()) as { offsets: { partition: number; offset: number }[] }).offsets;
    expect(o!.partition).toBe(1);
    const read = (await (await app.request(`/v1/topics/${TOPIC}/partitions/1/records?offset=${o!.offset}&maxRecords=1`)).json()) as { records: { key: string; value: string }[] };
    expect(read.records[0]).toMatchObject({ key: 'raw-key', value: 'raw bytes' });
  });

  it('produces a protobuf ProduceRequest and answers protobuf or JSON per Accept', async () => {
    const batch = await buildBatch([{ key: 'p1', value: 'proto-a' }, { key: 'p2', value: 'proto-b' }]);
    const body = new Uint8Array(encodeMessage('ProduceRequest', { acks: Acks.ALL, timeoutMs: 5000, topics: [{ name: TOPIC, partitions: [{ partition: 0, records: batch }] }] }));
    const asJson = await app.request(`/v1/topics/${TOPIC}/records`, { method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body });
    expect(asJson.status).toBe(200);
    const { offsets } = (await asJson.json()) as { offsets: { partition: number; offset: number }[] };
    expect(offsets).toHaveLength(2);
    expect(offsets[1]!.offset).toBe(offsets[0]!.offset + 1);

    const asProto = await app.request(`/v1/topics/${TOPIC}/records`, { method: 'POST', headers: { 'content-type': 'application/x-protobuf', accept: 'application/x-protobuf' }, body });
    expect(asProto.status).toBe(200);
    expect(asProto.headers.get('content-type')).toBe('application/x-protobuf');
    const decoded = decodeBody<ProduceResponse>('ProduceResponse', new Uint8Array(await asProto.arrayBuffer()));
    expect(Number(decoded.topics[0]!.partitions[0]!.baseOffset)).toBe(offsets[1]!.offset + 1);
  });

  it('long-polls: a read waits for a record produced after it started', async () => {
    const [latest] = await client.admin().listOffsets(TOPIC, { partitions: [1] });
    const pending = Promise.resolve(app.request(`/v1/topics/${TOPIC}/partitions/1/records?offset=${latest!.offset}&waitMs=4000`));
    await new Promise((r) => setTimeout(r, 300));
    await postJson(`/v1/topics/${TOPIC}/records`, { records: [{ value: 'late', partition: 1 }] });
    const body = (await (await pending).json()) as { records: { value: string }[] };
    expect(body.records.map((r) => r.value)).toEqual(['late']);
  });
});

describe('throttling', () => {
  it('answers 429 with Retry-After when too many reads wait', async () => {
    const small = createGatewayApp({ client, limits: { ...LIMITS, readsInflightMax: 1 } });
    try {
      const [latest] = await client.admin().listOffsets(TOPIC, { partitions: [0] });
      const waiting = Promise.resolve(small.request(`/v1/topics/${TOPIC}/partitions/0/records?offset=${latest!.offset}&waitMs=1500`));
      await new Promise((r) => setTimeout(r, 100));
      const res = await small.request(`/v1/topics/${TOPIC}/partitions/0/records?offset=0`);
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(await res.json()).toMatchObject({ code: 'THROTTLED', retriable: true });
      expect((await waiting).status).toBe(200);
    } finally {
      await small.close();
    }
  });
});

describe('refused requests write nothing', () => {
  const path = `/v1/topics/${TOPIC}/records`;
  const post = (body: string | Uint8Array, contentType: string, headers: Record<string, string> = {}) => () =>
    app.request(path, { method: 'POST', headers: { 'content-type': contentType, ...headers }, body });

  it('malformed JSON → 400', () => expectRefused(post('{"records": [', 'application/json'), 400, 'INVALID_ARGUMENT'));
  it('a record without a value → 400', () => expectRefused(post(JSON.stringify({ records: [{ value: 'ok' }, { key: 'k' }] }), 'application/json'), 400, 'INVALID_ARGUMENT'));
  it('bad base64 → 400', () => expectRefused(post(JSON.stringify({ valueEncoding: 'base64', records: [{ value: '!!!' }] }), 'application/json'), 400, 'INVALID_ARGUMENT'));
  it('wrong content type → 415', () => expectRefused(post('hello', 'text/plain'), 415, 'UNSUPPORTED_MEDIA_TYPE'));
  it('missing content type → 415', () => expectRefused(() => app.request(path, { method: 'POST', body: new Uint8Array([1]) }), 415, 'UNSUPPORTED_MEDIA_TYPE'));
  it('protobuf that does not decode → 400', () => expectRefused(post(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x0f]), 'application/x-protobuf'), 400, 'INVALID_REQUEST'));
  it('protobuf with a corrupt batch → 400', async () => {
    const batch = await buildBatch([{ value: 'x' }]);
    batch.writeUInt8(batch.readUInt8(batch.length - 1) ^ 0xff, batch.length - 1);
    const body = new Uint8Array(encodeMessage('ProduceRequest', { topics: [{ name: TOPIC, partitions: [{ partition: 0, records: batch }] }] }));
    await expectRefused(post(body, 'application/x-protobuf'), 400, 'CORRUPT_BATCH');
  });
  it('protobuf naming another topic → 400', async () => {
    const body = new Uint8Array(encodeMessage('ProduceRequest', { topics: [{ name: 'other', partitions: [{ partition: 0, records: await buildBatch([{ value: 'x' }]) }] }] }));
    await expectRefused(post(body, 'application/x-protobuf'), 400, 'INVALID_ARGUMENT');
  });
  it('protobuf batch whose CRC holds but whose records do not parse → 400', async () => {
    const batch = await buildBatch([{ value: 'ok' }, { value: 'fine' }]);
    const { recordsOffset } = readBatchHeader(batch);
    batch.writeUInt8(0x7e, recordsOffset); // the first record's length varint now runs past the section
    recomputeCrc(batch);
    // A good batch for another partition first: the gateway must refuse the request before either goes out.
    const good = await buildBatch([{ value: 'good' }]);
    const body = new Uint8Array(encodeMessage('ProduceRequest', { topics: [{ name: TOPIC, partitions: [{ partition: 1, records: good }, { partition: 0, records: batch }] }] }));
    await expectRefused(post(body, 'application/x-protobuf'), 400, 'CORRUPT_BATCH');
  });
  it('protobuf with bytes after the last whole batch → 400', async () => {
    const batch = Buffer.concat([await buildBatch([{ value: 'ok' }]), Buffer.from([1, 2, 3])]);
    const body = new Uint8Array(encodeMessage('ProduceRequest', { topics: [{ name: TOPIC, partitions: [{ partition: 0, records: batch }] }] }));
    await expectRefused(post(body, 'application/x-protobuf'), 400, 'CORRUPT_BATCH');
  });
  it('protobuf batch claiming an origin region (the mesh sets that) → 400', async () => {
    const batch = await buildBatch([{ value: 'x' }], { origin: { region: 'eu', offset: 7 } });
    const body = new Uint8Array(encodeMessage('ProduceRequest', { topics: [{ name: TOPIC, partitions: [{ partition: 0, records: batch }] }] }));
    await expectRefused(post(body, 'application/x-protobuf'), 400, 'INVALID_ARGUMENT');
  });
  it('protobuf batch with a record over the limit → 413', async () => {
    const batch = await buildBatch([{ value: 'ok' }, { value: 'x'.repeat(LIMITS.recordBytesMax + 1) }]);
    const body = new Uint8Array(encodeMessage('ProduceRequest', { topics: [{ name: TOPIC, partitions: [{ partition: 0, records: batch }] }] }));
    await expectRefused(post(body, 'application/x-protobuf'), 413, 'MESSAGE_TOO_LARGE');
  });
  it('protobuf with a partition out of range → 404', async () => {
    const body = new Uint8Array(encodeMessage('ProduceRequest', { topics: [{ name: TOPIC, partitions: [{ partition: 0, records: await buildBatch([{ value: 'ok' }]) }, { partition: 5, records: await buildBatch([{ value: 'x' }]) }] }] }));
    await expectRefused(post(body, 'application/x-protobuf'), 404, 'UNKNOWN_TOPIC_OR_PARTITION');
  });
  it('body over the limit (streamed) → 413', () => {
    const big = JSON.stringify({ records: [{ value: 'x'.repeat(LIMITS.bodyBytesMax) }] });
    return expectRefused(post(big, 'application/json'), 413, 'MESSAGE_TOO_LARGE');
  });
  it('body over the limit, streamed without Content-Length → 413', () => {
    const chunk = new Uint8Array(16 * 1024).fill(0x61);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        // Twice the limit, in chunks: the gateway must stop counting once past it.
        if (sent > 2 * LIMITS.bodyBytesMax) return controller.close();
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    return expectRefused(() => app.request(path, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: stream, duplex: 'half' } as RequestInit), 413, 'MESSAGE_TOO_LARGE');
  });
  it('body over the limit (Content-Length) → 413', () => expectRefused(post('{}', 'application/json', { 'content-length': String(LIMITS.bodyBytesMax + 1) }), 413, 'MESSAGE_TOO_LARGE'));
  it('a record over the limit, after a good one → 413', () =>
    expectRefused(post(JSON.stringify({ records: [{ value: 'fine', partition: 0 }, { value: 'x'.repeat(LIMITS.recordBytesMax + 1), partition: 0 }] }), 'application/json'), 413, 'MESSAGE_TOO_LARGE'));
  it('unknown topic → 404', () =>
    expectRefused(() => app.request('/v1/topics/no-such-topic/records', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ records: [{ value: 'x' }] }) }), 404, 'UNKNOWN_TOPIC_OR_PARTITION'));
  it('partition out of range, after a good record → 404', () =>
    expectRefused(post(JSON.stringify({ records: [{ value: 'ok', partition: 0 }, { value: 'x', partition: 2 }] }), 'application/json'), 404, 'UNKNOWN_TOPIC_OR_PARTITION'));
  it('bad acks → 400', () => expectRefused(() => app.request(`${path}?acks=2`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ records: [{ value: 'x' }] }) }), 400, 'INVALID_ARGUMENT'));
  it('empty records → 400', () => expectRefused(post(JSON.stringify({ records: [] }), 'application/json'), 400, 'INVALID_ARGUMENT'));

  it('reads: bad numbers 400, unknown topic and partition 404, offset past the end 416', async () => {
    const base = `/v1/topics/${TOPIC}/partitions`;
    for (const q of ['offset=-1', 'offset=abc', 'maxRecords=0', `maxRecords=${LIMITS.recordsMax + 1}`, `waitMs=${LIMITS.waitMsMax + 1}`, 'waitMs=1.5']) {
      await expectRefused(() => app.request(`${base}/0/records?${q}`), 400, 'INVALID_ARGUMENT');
    }
    await expectRefused(() => app.request(`${base}/x/records`), 400, 'INVALID_ARGUMENT');
    await expectRefused(() => app.request(`${base}/2/records`), 404, 'UNKNOWN_TOPIC_OR_PARTITION');
    await expectRefused(() => app.request('/v1/topics/no-such-topic/partitions/0/records'), 404, 'UNKNOWN_TOPIC_OR_PARTITION');
    await expectRefused(() => app.request(`${base}/0/records?offset=999999`), 416, 'OFFSET_OUT_OF_RANGE');
  });
});
