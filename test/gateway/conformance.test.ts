// Proves the HTTP API is what docs/openapi.yaml says, as standard tools see it: every operation and every documented status is driven against real gateways over HTTP (auth off and on) in front of a real cell, every answer (status, media type, required headers, body, and no undocumented fields) is validated against the document with ajv (JSON Schema 2020-12), requests the document refuses must be refused, no documented (operation, status) pair may go unexercised, and `promtool check metrics` accepts every process's /metrics.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBatch } from '../../src/log/index.ts';
import { Acks, encodeMessage } from '../../src/protocol/index.ts';
import { eventually } from '../../src/testing/index.ts';
import { DASHBOARD_STREAMS_MAX } from '../../src/dashboard/index.ts';
import { ConformanceRig, KEYED_TOPIC, KEYS, LIMITS, type ServedGateway } from './conformance-gateways.ts';
import { OpenApiContract } from './openapi-contract.ts';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { installTracing, shutdownTracing } from '../../src/tracing/index.ts';

const OPENAPI = fileURLToPath(new URL('../../docs/openapi.yaml', import.meta.url));
/**
 * Documented pairs this test cannot reach against a real cell, each with where it is covered
 * instead. Kept short on purpose: every entry must still be documented.
 */
const NOT_DRIVEN = new Map([
  [
    'produceRecords 409',
    'an idempotent batch refused out of order once its delivery timeout passed (a broker that lost the producer\'s state); no deterministic trigger against a healthy cell; a re-created topic, which used to give it, is now a 200 (driven below); the refusal itself is covered by src/client/producer.test.ts',
  ],
  [
    'commitGroupOffsets 409',
    'a rebalance between a member\'s poll and its commit (no deterministic trigger without pausing a coordinator); the mapping is covered by src/gateway/groups.test.ts',
  ],
]);
/** A partition the happy paths use, and its topic's partition count. */
const PARTITIONS = 2;
/** Long enough for a read to be waiting while the next one is refused; within LIMITS.waitMsMax. */
const LONG_POLL_MS = 5_000;
/** Bound on waiting for a background state (group settling, streams starting, leaders). */
const SETTLE_MS_MAX = 20_000;
const PROMTOOL = spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0;
if (!PROMTOOL) console.warn('conformance: promtool is not installed (Debian package "prometheus"; `npm test` installs it): the promtool check is skipped');

let contract: OpenApiContract;
let rig: ConformanceRig;

beforeAll(async () => {
  contract = await OpenApiContract.load(OPENAPI);
  rig = await ConformanceRig.start(contract);
}, 60_000);

afterAll(async () => rig?.close());

const protobufBody = async (topic: string, partition: number, values: string[]): Promise<Uint8Array> =>
  new Uint8Array(encodeMessage('ProduceRequest', { acks: Acks.ALL, timeoutMs: 10_000, topics: [{ name: topic, partitions: [{ partition, records: await buildBatch(values.map((value) => ({ value }))) }] }] }));

/** Joins, polls until `expected` records came, commits both ways and leaves. */
async function groupRoundTrip(gw: ServedGateway, key: string | undefined, topic: string, expected: number): Promise<void> {
  const group = `${gw.name}-happy`;
  const joined = await gw.call('POST', `/v1/groups/${group}/members`, { key, json: { topics: [topic], fromBeginning: true } });
  expect(joined.status).toBe(201);
  const member = `/v1/groups/${group}/members/${joined.json<{ memberId: string }>().memberId}`;
  const got: { partition: number; offset: number }[] = [];
  await eventually(async () => {
    const polled = await gw.call('GET', `${member}/records?waitMs=300&valueEncoding=base64`, { key });
    expect(polled.status).toBe(200);
    got.push(...polled.json<{ records: { partition: number; offset: number }[] }>().records);
    return got.length >= expected;
  }, SETTLE_MS_MAX, 'the member to poll every record');
  expect((await gw.call('POST', `${member}/commit`, { key })).status).toBe(204);
  expect((await gw.call('POST', `${member}/commit`, { key, json: { offsets: [{ topic, partition: 0, offset: 1 }] } })).status).toBe(204);
  expect((await gw.call('DELETE', member, { key })).status).toBe(204);
}

/** The dashboard: the page, its assets, the history of each range (400 for another), the stream and its bound. */
async function dashboardPaths(gw: ServedGateway, key: string): Promise<void> {
  const page = await gw.call('GET', '/dashboard');
  expect(page.status).toBe(200);
  const html = page.text;
  for (const name of [/assets\/(app-[0-9a-f]+\.js)/.exec(html)![1]!, /assets\/(app-[0-9a-f]+\.css)/.exec(html)![1]!]) {
    const asset = await gw.call('GET', `/dashboard/assets/${name}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toMatch(/immutable/);
  }
  expect((await gw.call('GET', '/dashboard/assets/app-000000000000.js')).status).toBe(404);
  for (const range of ['5m', '1h', '24h']) expect((await gw.call('GET', `/v1/dashboard/history?range=${range}`, { key })).status).toBe(200);
  expect((await gw.call('GET', '/v1/dashboard/history?range=2d', { key })).status).toBe(400);
  const streams = [];
  for (let i = 0; i < DASHBOARD_STREAMS_MAX; i++) streams.push(await gw.stream('/v1/dashboard/stream', { key }));
  expect(streams.map((s) => s.status)).toEqual(Array(DASHBOARD_STREAMS_MAX).fill(200));
  expect(await streams[0]!.firstFrame(SETTLE_MS_MAX)).toContain('event: snapshot');
  const refused = await gw.stream('/v1/dashboard/stream', { key });
  expect(refused.status).toBe(429);
  await refused.close();
  for (const s of streams) await s.close();
  await eventually(async () => {
    const s = await gw.stream('/v1/dashboard/stream', { key });
    await s.close();
    return s.status === 200;
  }, SETTLE_MS_MAX, 'the dashboard streams to free their slots');
}

/** Every operation's happy path on one gateway (`key` is the admin key when auth is on). */
async function happyPaths(gw: ServedGateway, topic: string, key?: string): Promise<void> {
  expect((await gw.call('GET', '/healthz')).status).toBe(200);
  await eventually(async () => (await gw.call('GET', '/readyz')).status === 200, SETTLE_MS_MAX, 'ready');
  expect((await gw.call('GET', '/metrics')).status).toBe(200);
  // Config values may be numbers (stored as strings), as the document says.
  const created = await gw.call('POST', '/v1/topics', { key, json: { name: topic, partitions: PARTITIONS, replicationFactor: 3, config: { 'retention.ms': 600000, 'segment.bytes': '8388608' } } });
  expect(created.status).toBe(201);
  expect(created.json<{ config: Record<string, string> }>().config['retention.ms']).toBe('600000');
  expect((await gw.call('GET', '/v1/topics', { key })).json<{ topics: string[] }>().topics).toContain(topic);
  expect((await gw.call('GET', `/v1/topics/${topic}`, { key })).status).toBe(200);
  expect((await gw.call('GET', '/v1/cell', { key })).status).toBe(200);

  const json = await gw.call('POST', `/v1/topics/${topic}/records?acks=all`, { key, json: { records: [{ key: 'k', value: 'a', headers: { h: 'v' } }, { value: null, partition: 1 }, { value: 'b', partition: null }] } });
  expect(json.status).toBe(200);
  expect((await gw.call('POST', `/v1/topics/${topic}/records?acks=0`, { key, json: { valueEncoding: 'base64', records: [{ value: 'aGk=', partition: 0 }] } })).json<{ offsets: { offset: number }[] }>().offsets[0]!.offset).toBe(-1);
  const pb = await gw.call('POST', `/v1/topics/${topic}/records?acks=1`, { key, body: await protobufBody(topic, 0, ['p1', 'p2']), type: 'application/x-protobuf', headers: { accept: 'application/x-protobuf' } });
  expect(pb.headers.get('content-type')).toBe('application/x-protobuf');
  expect((await gw.call('POST', `/v1/topics/${topic}/records`, { key, body: await protobufBody(topic, 1, ['p3']), type: 'application/x-protobuf' })).status).toBe(200);
  expect((await gw.call('POST', `/v1/topics/${topic}/records`, { key, body: 'raw bytes', type: 'application/octet-stream', headers: { 'x-edgeq-key': 'rk', 'x-edgeq-partition': '0' } })).status).toBe(200);

  const read = await gw.call('GET', `/v1/topics/${topic}/partitions/0/records?offset=0&maxRecords=10&waitMs=1000`, { key });
  expect(read.json<{ records: unknown[] }>().records.length).toBeGreaterThan(0);
  expect((await gw.call('GET', `/v1/topics/${topic}/partitions/1/records?valueEncoding=base64`, { key })).status).toBe(200);
  const stream = await gw.stream(`/v1/topics/${topic}/partitions/0/stream?offset=0`, { key });
  expect(stream.status).toBe(200);
  expect(await stream.firstFrame(SETTLE_MS_MAX)).toContain('id: 0');
  await stream.close();
  await eventually(async () => {
    const s = await gw.stream(`/v1/topics/${topic}/partitions/1/stream`, { key, headers: { 'last-event-id': '0' } });
    await s.close();
    return s.status === 200;
  }, SETTLE_MS_MAX, 'the first stream to free its slot');

  await groupRoundTrip(gw, key, topic, 7);

  await quotaPaths(gw, topic, key);

  const gone = `${topic}-gone`;
  expect((await gw.call('POST', '/v1/topics', { key, json: { name: gone, partitions: 1, scope: 'local' } })).status).toBe(201);
  expect((await gw.call('DELETE', `/v1/topics/${gone}`, { key })).status).toBe(204);

  // The mesh and the limiter: the keyed gateway has them (a stub mesh over this cell), the open one neither.
  if (key !== undefined) {
    expect((await gw.call('GET', '/v1/limiter', { key })).status).toBe(200);
    const capacity = await gw.call('GET', '/v1/capacity', { key });
    expect(capacity.status).toBe(200);
    expect(capacity.json<{ forecast: unknown[]; plan: unknown[] }>().forecast.length).toBeGreaterThan(0);
    expect((await gw.call('GET', '/v1/mesh', { key })).status).toBe(200);
    const everywhere = `${topic}-global`;
    const made = await gw.call('POST', '/v1/topics', { key, json: { name: everywhere, partitions: 1, scope: 'global' } });
    expect(made.status).toBe(201);
    expect(made.json<{ config: Record<string, string> }>().config['scope']).toBe('global');
    // acks=geo on it: the stub's other region never applies anything, so GEO_TIMEOUT (504).
    const geo = await gw.call('POST', `/v1/topics/${everywhere}/records?acks=geo&regions=1&timeoutMs=50`, { key, json: { records: [{ value: 'g' }] } });
    expect(geo.status).toBe(504);
    expect((await gw.call('DELETE', `/v1/topics/${everywhere}`, { key })).status).toBe(204);
    await failoverPaths(gw, key);
    await drillPaths(gw, key);
    await dashboardPaths(gw, key);
  } else {
    for (const path of ['/dashboard', '/dashboard/assets/app-0.js', '/v1/dashboard/history', '/v1/dashboard/stream']) expect((await gw.call('GET', path)).status, path).toBe(404);
    expect((await gw.call('GET', '/v1/limiter')).status).toBe(404);
    expect((await gw.call('GET', '/v1/capacity')).status).toBe(404);
    expect((await gw.call('GET', '/v1/mesh')).status).toBe(404);
    // Without a mesh no other region is known.
    expect((await gw.call('POST', '/v1/groups/o-moved/failover', { json: { from: 'eu-west' } })).status).toBe(404);
    // Without --drills-dir.
    expect((await gw.call('GET', '/v1/drills')).status).toBe(404);
    expect((await gw.call('GET', '/v1/drills/20260304T050607-broker-kill-0000')).status).toBe(404);
    expect((await gw.call('POST', '/v1/drills', { json: { scenario: 'broker-kill' } })).status).toBe(404);
  }
}

/** Drills over the rig's store and its spawner that starts nothing: a stored report, a start, and every refusal. */
async function drillPaths(gw: ServedGateway, key: string): Promise<void> {
  const id = '20260304T050607-broker-kill-0000';
  await rig.drills.store.save(id, {
    scenario: 'broker-kill', region: 'us-east', seed: 7, startedAt: '2026-03-04T05:06:07.000Z', faultAt: '2026-03-04T05:06:09.000Z', healAt: '2026-03-04T05:06:19.000Z',
    detectMs: 120, recoverMs: 340, convergeMs: 900, unavailableMs: { 'us-east': 340 }, acked: 1000, lost: 0, duplicates: 0, reordered: 0,
    indeterminate: { total: 1, found: 1 }, divergentOffsets: 0, timeline: [{ t: '2026-03-04T05:06:09.000Z', event: 'fault.kill', detail: 'us-east/broker-2' }], verdict: 'pass', reasons: [],
  });
  expect((await gw.call('GET', '/v1/drills', { key })).json<{ drills: { id: string }[] }>().drills.map((d) => d.id)).toEqual([id]);
  expect((await gw.call('GET', `/v1/drills/${id}`, { key })).status).toBe(200);
  expect((await gw.call('GET', '/v1/drills/..%2Fsecrets', { key })).status).toBe(400);
  expect((await gw.call('GET', '/v1/drills/20260304T050607-broker-kill-ffff', { key })).status).toBe(404);
  for (const json of [{}, { scenario: 'meteor' }, { scenario: 'broker-kill', region: 'mars' }, { scenario: 'broker-kill', durationS: 0 }, { scenario: 'broker-kill', extra: 1 }]) {
    expect((await gw.call('POST', '/v1/drills', { key, json })).status, JSON.stringify(json)).toBe(400);
  }
  expect((await gw.call('POST', '/v1/drills', { key, body: 'x'.repeat(LIMITS.bodyBytesMax! + 1), type: 'application/json' })).status).toBe(413);
  expect((await gw.call('POST', '/v1/drills', { key, body: 'scenario=broker-kill', type: 'text/plain' })).status).toBe(415);
  expect(rig.drills.started).toEqual([]);
  const started = await gw.call('POST', '/v1/drills', { key, json: { scenario: 'leader-kill', region: 'eu-west', durationS: 10, rate: 20, seed: 3 } });
  expect(started.status).toBe(202);
  const running = started.json<{ id: string }>().id;
  expect(started.headers.get('location')).toBe(`/v1/drills/${running}`);
  expect((await gw.call('GET', `/v1/drills/${running}`, { key })).json()).toMatchObject({ state: 'running', progress: { phase: 'connect' } });
  // The rig's child never exits: the next start is refused.
  expect((await gw.call('POST', '/v1/drills', { key, json: { scenario: 'broker-kill' } })).status).toBe(409);
  expect(rig.drills.started).toHaveLength(1);
}

/** Quotas: create, replace, list, read, enforce (429 with its headers), delete, and every refusal. */
async function quotaPaths(gw: ServedGateway, topic: string, key?: string): Promise<void> {
  const path = `/v1/quotas/*/${topic}`;
  expect((await gw.call('PUT', path, { key, json: { recordsPerSec: 1, bytesPerSec: 1_000_000, burstRecords: 1 } })).status).toBe(201);
  expect((await gw.call('PUT', path, { key, json: { recordsPerSec: 1, bytesPerSec: 1_000_000, burstRecords: 2, scope: 'local' } })).status).toBe(200);
  expect((await gw.call('GET', '/v1/quotas', { key })).json<{ quotas: unknown[] }>().quotas).toHaveLength(1);
  expect((await gw.call('GET', path, { key })).status).toBe(200);
  expect((await gw.call('POST', `/v1/topics/${topic}/records`, { key, json: { records: [{ value: 'q1' }, { value: 'q2' }] } })).status).toBe(200);
  const over = await gw.call('POST', `/v1/topics/${topic}/records`, { key, json: { records: [{ value: 'q3' }] } });
  expect(over.status).toBe(429);
  expect(over.json<{ type: string }>().type).toBe('https://iana.org/assignments/http-problem-types#quota-exceeded');
  expect((await gw.call('PUT', path, { key, json: { recordsPerSec: 0, bytesPerSec: 1 } })).status).toBe(400);
  expect((await gw.call('PUT', '/v1/quotas/no%20spaces/x', { key, json: { recordsPerSec: 1, bytesPerSec: 1 } })).status).toBe(400);
  expect((await gw.call('GET', '/v1/quotas/no%20spaces/x', { key })).status).toBe(400);
  expect((await gw.call('DELETE', '/v1/quotas/no%20spaces/x', { key })).status).toBe(400);
  expect((await gw.call('PUT', path, { key, body: 'x'.repeat(LIMITS.bodyBytesMax! + 1), type: 'application/json' })).status).toBe(413);
  expect((await gw.call('PUT', path, { key, body: 'recordsPerSec=1', type: 'text/plain' })).status).toBe(415);
  expect((await gw.call('DELETE', path, { key })).status).toBe(204);
  expect((await gw.call('DELETE', path, { key })).status).toBe(404);
  expect((await gw.call('GET', path, { key })).status).toBe(404);
}

/** Failover over the stub mesh (eu-west published k-moved and k-busy): the answer and every refusal. */
async function failoverPaths(gw: ServedGateway, key: string): Promise<void> {
  const failover = (group: string, o: Parameters<ServedGateway['call']>[2]) => gw.call('POST', `/v1/groups/${group}/failover`, { key, ...o });
  const moved = await failover('k-moved', { json: { from: 'eu-west' } });
  expect(moved.status).toBe(200);
  expect(moved.json<{ group: string; from: string; partitions: { topic: string; startOffset: number }[] }>()).toMatchObject({ group: 'k-moved', from: 'eu-west', partitions: [{ topic: KEYED_TOPIC, startOffset: 0 }] });
  expect((await failover('k-moved', { json: { from: 'us-east' } })).status).toBe(400);
  expect((await failover('k-moved', { json: {} })).status).toBe(400);
  expect((await failover('k-moved', { json: { from: 'mars' } })).status).toBe(404);
  expect((await failover('k-never', { json: { from: 'eu-west' } })).status).toBe(404);
  expect((await failover('k-moved', { body: 'x'.repeat(LIMITS.bodyBytesMax! + 1), type: 'application/json' })).status).toBe(413);
  expect((await failover('k-moved', { body: 'from=eu-west', type: 'text/plain' })).status).toBe(415);
  // A live member in the group: 409, and its commits are left alone.
  const joined = await gw.call('POST', '/v1/groups/k-busy/members', { key, json: { topics: [KEYED_TOPIC] } });
  expect(joined.status).toBe(201);
  const member = `/v1/groups/k-busy/members/${joined.json<{ memberId: string }>().memberId}`;
  await eventually(async () => {
    await gw.call('GET', `${member}/records?waitMs=100`, { key });
    return (await failover('k-busy', { json: { from: 'eu-west' } })).status === 409;
  }, SETTLE_MS_MAX, 'a failover into a group with a live member to be refused');
  expect((await gw.call('DELETE', member, { key })).status).toBe(204);
}

describe('the HTTP API against docs/openapi.yaml', () => {
  it('the document names every operation, lists required fields and documents 401 and default answers', () => {
    expect(contract.operations.length).toBeGreaterThanOrEqual(15);
    expect(contract.lint()).toEqual([]);
  });

  it('the app serves exactly the documented operations (a new route cannot slip in undocumented)', () => {
    // Hono's route table: handlers by method and pattern (`:name`); middlewares are registered as ALL.
    const shape = (path: string) => path.replace(/:[^/]+|\{[^}]+\}/g, '{}');
    const served = rig.open.app.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method} ${shape(r.path)}`);
    const documented = contract.operations.map((o) => `${o.method} ${shape(o.template)}`);
    expect([...new Set(served)].sort()).toEqual([...new Set(documented)].sort());
  });

  it('happy paths of every operation, without auth', async () => {
    await happyPaths(rig.open, 'o-main');
  }, 120_000);

  it('happy paths of every operation, with an admin key', async () => {
    await happyPaths(rig.keyed, KEYED_TOPIC, KEYS.admin);
  }, 120_000);

  it('topic errors: 400, 404, 409, 413, 415', async () => {
    const gw = rig.open;
    const big = 'x'.repeat(LIMITS.bodyBytesMax! + 1);
    for (const json of [
      { name: 'o-bad', partitions: 0 },
      { name: 'o bad', partitions: 1 },
      { name: 'o-bad', partitions: 1, config: { 'retention.ms': 'soon' } },
      { name: 'o-bad', partitions: 1, config: { 'retention.ms': true } },
      { name: 'o-bad', partitions: 1, scope: 'regional' },
      { name: 'o-bad', partitions: 1, config: { scope: 'global' } },
      // A global topic on a gateway without a mesh agent.
      { name: 'o-bad', partitions: 1, scope: 'global' },
    ]) {
      expect((await gw.call('POST', '/v1/topics', { json })).status).toBe(400);
    }
    expect((await gw.call('POST', '/v1/topics', { body: '{"name":', type: 'application/json' })).status).toBe(400);
    expect((await gw.call('POST', '/v1/topics', { json: { name: 'o-main', partitions: 1 } })).status).toBe(409);
    expect((await gw.call('POST', '/v1/topics', { body: big, type: 'application/json' })).status).toBe(413);
    expect((await gw.call('POST', '/v1/topics', { body: 'name=o-x', type: 'text/plain' })).status).toBe(415);
    expect((await gw.call('GET', '/v1/topics/o-none')).status).toBe(404);
    expect((await gw.call('DELETE', '/v1/topics/o-none')).status).toBe(404);
    expect((await gw.call('DELETE', '/v1/topics/__consumer_offsets')).status).toBe(400);
  }, 60_000);

  it('produce errors: 400, 404, 413, 415, and a topic created again', async () => {
    const gw = rig.open;
    const produce = (topic: string, o: Parameters<ServedGateway['call']>[2], query = '') => gw.call('POST', `/v1/topics/${topic}/records${query}`, o);
    expect((await produce('o-main', { body: '{"records":[', type: 'application/json' })).status).toBe(400);
    expect((await produce('o-main', { json: { records: [] } })).status).toBe(400);
    expect((await produce('o-main', { json: { records: [{ value: 'x' }] } }, '?acks=2')).status).toBe(400);
    // The schema's `minimum: 0`: a negative partition is a malformed request, not an unknown partition.
    expect((await produce('o-main', { json: { records: [{ value: 'x', partition: -1 }] } })).status).toBe(400);
    expect((await produce('o-main', { body: 'v', type: 'application/octet-stream', headers: { 'x-edgeq-partition': '-1' } })).status).toBe(400);
    expect((await produce('o-main', { body: await protobufBody('o-other', 0, ['x']), type: 'application/x-protobuf' })).status).toBe(400);
    expect((await produce('o-main', { body: new Uint8Array([1, 2, 3, 4, 5]), type: 'application/x-protobuf' })).status).toBe(400);
    expect((await produce('__consumer_offsets', { json: { records: [{ value: 'x' }] } })).status).toBe(400);
    expect((await produce('o-none', { json: { records: [{ value: 'x' }] } })).status).toBe(404);
    expect((await produce('o-main', { json: { records: [{ value: 'x', partition: PARTITIONS }] } })).status).toBe(404);
    expect((await produce('o-main', { json: { records: [{ value: 'x'.repeat(LIMITS.recordBytesMax! + 1) }] } })).status).toBe(413);
    expect((await produce('o-main', { body: 'x'.repeat(LIMITS.bodyBytesMax! + 1), type: 'application/octet-stream' })).status).toBe(413);
    expect((await produce('o-main', { body: 'x', type: 'text/plain' })).status).toBe(415);
    // A topic deleted and created again under its name (issue 11, finding 13): the gateway's
    // idempotent producer held the old topic's sequence numbers and answered 409; the topic's id
    // now tells the incarnations apart, and the first record of the new one is at offset 0.
    expect((await gw.call('POST', '/v1/topics', { json: { name: 'o-recreated', partitions: 1 } })).status).toBe(201);
    expect((await produce('o-recreated', { json: { records: [{ value: 'a' }, { value: 'b' }] } })).status).toBe(200);
    expect((await gw.call('DELETE', '/v1/topics/o-recreated')).status).toBe(204);
    expect((await gw.call('POST', '/v1/topics', { json: { name: 'o-recreated', partitions: 1 } })).status).toBe(201);
    const again = await produce('o-recreated', { json: { records: [{ value: 'c' }] } });
    expect(again.status).toBe(200);
    expect(again.json()).toMatchObject({ offsets: [{ partition: 0, offset: 0 }] });
  }, 60_000);

  it('produce 503: the limiter cut capacity (an injected signal over target); nothing is written', async () => {
    const gw = rig.keyed;
    const { limiter } = rig.limiter;
    const produce = () => gw.call('POST', `/v1/topics/${KEYED_TOPIC}/records`, { key: KEYS.admin, json: { records: [{ value: 'refused', partition: 0 }] } });
    const hwm = async () => (await rig.client.admin().cellStatus()).partitions.find((p) => p.topic === KEYED_TOPIC && p.partition === 0)!.highWatermark;
    rig.limiter.interval({ produceP99Ms: 1_000 });
    // Take what the admin key's tenant (ops) has left, so the next request has no room (bounded by the cut capacity).
    for (let i = 0; i < 200_000; i++) {
      try {
        limiter.admit('ops', 1).done(true, 1);
      } catch {
        break;
      }
    }
    const before = await hwm();
    const refused = await produce();
    expect(refused.status).toBe(503);
    expect(refused.json()).toMatchObject({ type: 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity', code: 'TEMPORARY_REDUCED_CAPACITY' });
    for (const h of ['retry-after', 'ratelimit-policy', 'ratelimit']) expect(refused.headers.get(h), h).not.toBeNull();
    expect(await hwm()).toBe(before);
    // Quiet again, and the buckets refilled: the route admits.
    rig.limiter.interval({});
    expect((await produce()).status).toBe(200);
  }, 60_000);

  it('read and stream errors: 400, 404, 416, 429', async () => {
    const gw = rig.open;
    const read = (path: string) => gw.call('GET', path);
    for (const q of ['maxRecords=0', 'maxRecords=x', 'waitMs=-1', 'valueEncoding=hex', `maxRecords=${LIMITS.recordsMax! + 1}`]) expect((await read(`/v1/topics/o-main/partitions/0/records?${q}`)).status).toBe(400);
    expect((await read('/v1/topics/o-main/partitions/x/records')).status).toBe(400);
    expect((await read('/v1/topics/o-none/partitions/0/records')).status).toBe(404);
    expect((await read(`/v1/topics/o-main/partitions/${PARTITIONS}/records`)).status).toBe(404);
    expect((await read('/v1/topics/o-main/partitions/0/records?offset=1000000')).status).toBe(416);
    for (const path of ['/v1/topics/o-main/partitions/0/stream?offset=x', '/v1/topics/o-none/partitions/0/stream', '/v1/topics/o-main/partitions/0/stream?offset=1000000']) {
      const s = await gw.stream(path);
      expect([400, 404, 416]).toContain(s.status);
    }
    // readsInflightMax reads wait at the end of the partition; the next is refused.
    const [{ highWatermark }] = [(await read('/v1/topics/o-main/partitions/1/records?maxRecords=1')).json<{ highWatermark: number }>()];
    const waiting = Array.from({ length: LIMITS.readsInflightMax! }, () => read(`/v1/topics/o-main/partitions/1/records?offset=${highWatermark}&waitMs=${LONG_POLL_MS}`));
    await eventually(async () => (await read('/v1/topics/o-main/partitions/0/records?maxRecords=1')).status === 429, LONG_POLL_MS, 'a read to be throttled');
    await Promise.all(waiting);
    // streamsMax streams are open; the next is refused.
    const first = await gw.stream('/v1/topics/o-main/partitions/0/stream');
    expect(first.status).toBe(200);
    await first.firstFrame(SETTLE_MS_MAX);
    const second = await gw.stream('/v1/topics/o-main/partitions/1/stream');
    expect(second.status).toBe(429);
    await first.close();
  }, 60_000);

  it('group errors: 400, 404, 413, 415, 429', async () => {
    const gw = rig.open;
    const join = (group: string, o: Parameters<ServedGateway['call']>[2]) => gw.call('POST', `/v1/groups/${group}/members`, o);
    for (const json of [{}, { topics: [] }, { topics: [1] }, { topics: ['o-main'], fromBeginning: 'yes' }]) expect((await join('o-g', { json })).status).toBe(400);
    expect((await join('g'.repeat(256), { json: { topics: ['o-main'] } })).status).toBe(400);
    expect((await join('o-g', { json: { topics: ['o-none'] } })).status).toBe(404);
    expect((await join('o-g', { body: 'x'.repeat(LIMITS.bodyBytesMax! + 1), type: 'application/json' })).status).toBe(413);
    expect((await join('o-g', { body: 'topics=o-main', type: 'text/plain' })).status).toBe(415);
    const members: string[] = [];
    for (let i = 0; i < LIMITS.membersMax!; i++) {
      const res = await join('o-g', { json: { topics: ['o-main'] } });
      expect(res.status).toBe(201);
      members.push(`/v1/groups/o-g/members/${res.json<{ memberId: string }>().memberId}`);
    }
    expect((await join('o-g', { json: { topics: ['o-main'] } })).status).toBe(429);
    const member = members[0]!;
    expect((await gw.call('GET', `${member}/records?maxRecords=0`)).status).toBe(400);
    expect((await gw.call('POST', `${member}/commit`, { json: { offsets: [{ topic: 'o-main', partition: -1, offset: 0 }] } })).status).toBe(400);
    expect((await gw.call('POST', `${member}/commit`, { json: { offsets: [{ topic: 'o-other', partition: 0, offset: 0 }] } })).status).toBe(400);
    expect((await gw.call('POST', `${member}/commit`, { json: { offsets: [{ topic: 'o-main', partition: PARTITIONS, offset: 0 }] } })).status).toBe(404);
    expect((await gw.call('POST', `${member}/commit`, { body: 'x'.repeat(LIMITS.bodyBytesMax! + 1), type: 'application/json' })).status).toBe(413);
    expect((await gw.call('POST', `${member}/commit`, { body: 'offsets', type: 'text/plain' })).status).toBe(415);
    for (const m of members) expect((await gw.call('DELETE', m)).status).toBe(204);
    const gone = members[0]!;
    expect((await gw.call('GET', `${gone}/records`)).status).toBe(404);
    expect((await gw.call('POST', `${gone}/commit`)).status).toBe(404);
    expect((await gw.call('DELETE', gone)).status).toBe(404);
  }, 60_000);

  it('auth: 401 with WWW-Authenticate on every /v1 operation, 403 without the grant', async () => {
    const gw = rig.keyed;
    const t = KEYED_TOPIC;
    const joined = await gw.call('POST', `/v1/groups/k-g/members`, { key: KEYS.admin, json: { topics: [t] } });
    const member = `/v1/groups/k-g/members/${joined.json<{ memberId: string }>().memberId}`;
    const v1: [string, string, { json?: unknown }][] = [
      ['GET', '/v1/cell', {}],
      ['GET', '/v1/limiter', {}],
      ['GET', '/v1/tracing', {}],
      ['PUT', '/v1/tracing', { json: { sampleRatio: 0.5 } }],
      ['GET', '/v1/capacity', {}],
      ['GET', '/v1/dashboard/history', {}],
      ['GET', '/v1/dashboard/stream', {}],
      ['GET', '/v1/mesh', {}],
      ['GET', '/v1/topics', {}],
      ['POST', '/v1/topics', { json: { name: 'k-new', partitions: 1 } }],
      ['GET', `/v1/topics/${t}`, {}],
      ['DELETE', `/v1/topics/${t}`, {}],
      ['POST', `/v1/topics/${t}/records`, { json: { records: [{ value: 'x' }] } }],
      ['GET', `/v1/topics/${t}/partitions/0/records`, {}],
      ['GET', `/v1/topics/${t}/partitions/0/stream`, {}],
      ['POST', '/v1/groups/k-g/members', { json: { topics: [t] } }],
      ['GET', `${member}/records`, {}],
      ['POST', `${member}/commit`, {}],
      ['DELETE', member, {}],
      ['POST', '/v1/groups/k-moved/failover', { json: { from: 'eu-west' } }],
      ['GET', '/v1/quotas', {}],
      ['GET', '/v1/quotas/shop/*', {}],
      ['PUT', '/v1/quotas/shop/*', { json: { recordsPerSec: 1, bytesPerSec: 1 } }],
      ['DELETE', '/v1/quotas/shop/*', {}],
      ['GET', '/v1/drills', {}],
      ['GET', '/v1/drills/20260304T050607-broker-kill-0000', {}],
      ['POST', '/v1/drills', { json: { scenario: 'broker-kill' } }],
    ];
    for (const [method, path, o] of v1) {
      for (const key of [undefined, 'not-a-key']) {
        const res = await gw.call(method, path, { ...o, ...(key === undefined ? {} : { key }) });
        expect(res.status, `${method} ${path}`).toBe(401);
        expect(res.headers.get('www-authenticate') ?? '(no WWW-Authenticate)').toMatch(key === undefined ? /^Bearer realm="edgeq"$/ : /^Bearer realm="edgeq", error="invalid_token"/);
      }
      expect((await gw.call(method, path, { ...o, headers: { 'x-api-key': 'not-a-key' } })).status).toBe(401);
    }
    const forbidden: [string, string, string, { json?: unknown }][] = [
      ['GET', '/v1/cell', KEYS.reader, {}],
      ['GET', '/v1/limiter', KEYS.reader, {}],
      ['GET', '/v1/tracing', KEYS.reader, {}],
      ['PUT', '/v1/tracing', KEYS.writer, { json: { sampleRatio: 0.5 } }],
      ['GET', '/v1/capacity', KEYS.reader, {}],
      ['GET', '/v1/dashboard/history', KEYS.reader, {}],
      ['GET', '/v1/dashboard/stream', KEYS.reader, {}],
      ['GET', '/v1/mesh', KEYS.reader, {}],
      ['POST', '/v1/topics', KEYS.reader, { json: { name: 'k-new', partitions: 1 } }],
      ['GET', `/v1/topics/${t}`, KEYS.stranger, {}],
      ['DELETE', `/v1/topics/${t}`, KEYS.writer, {}],
      ['POST', `/v1/topics/${t}/records`, KEYS.reader, { json: { records: [{ value: 'x' }] } }],
      ['GET', `/v1/topics/${t}/partitions/0/records`, KEYS.writer, {}],
      ['GET', `/v1/topics/${t}/partitions/0/stream`, KEYS.writer, {}],
      ['POST', '/v1/groups/k-g/members', KEYS.writer, { json: { topics: [t] } }],
      ['GET', `${member}/records`, KEYS.writer, {}],
      ['POST', `${member}/commit`, KEYS.writer, {}],
      ['DELETE', member, KEYS.writer, {}],
      ['POST', '/v1/groups/k-moved/failover', KEYS.reader, { json: { from: 'eu-west' } }],
      ['GET', '/v1/quotas', KEYS.writer, {}],
      ['GET', '/v1/quotas/shop/*', KEYS.writer, {}],
      ['PUT', '/v1/quotas/shop/*', KEYS.writer, { json: { recordsPerSec: 1_000_000, bytesPerSec: 1_000_000 } }],
      ['DELETE', '/v1/quotas/shop/*', KEYS.writer, {}],
      ['GET', '/v1/drills', KEYS.reader, {}],
      ['GET', '/v1/drills/20260304T050607-broker-kill-0000', KEYS.reader, {}],
      ['POST', '/v1/drills', KEYS.reader, { json: { scenario: 'broker-kill' } }],
    ];
    for (const [method, path, key, o] of forbidden) expect((await gw.call(method, path, { ...o, key })).status, `${method} ${path}`).toBe(403);
    // Listing filters by grant instead of refusing.
    expect((await gw.call('GET', '/v1/topics', { key: KEYS.stranger })).json<{ topics: string[] }>().topics).toEqual([]);
    expect((await gw.call('DELETE', member, { key: KEYS.admin })).status).toBe(204);
  }, 60_000);

  it.skipIf(!PROMTOOL)('promtool check metrics accepts every process\'s /metrics (both gateways and every broker)', async () => {
    const urls = [`${rig.open.url}/metrics`, `${rig.keyed.url}/metrics`, ...rig.brokerMetricsUrls()];
    expect(urls).toHaveLength(5);
    for (const url of urls) {
      const res = await fetch(url);
      expect(res.status, url).toBe(200);
      const text = await res.text();
      const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect({ url, status: check.status, out: `${check.stdout}${check.stderr}`.trim() }).toEqual({ url, status: 0, out: '' });
      // The planner's forecast quantiles (issue 15's contract names the label) are a summary, so promtool accepts them.
      if (url === `${rig.keyed.url}/metrics`) expect(text).toMatch(/^edgeq_planner_forecast_records_per_second\{quantile="0\.9"\} /m);
    }
  }, 30_000);

  it('tracing: off (GET says so, PUT 404), then on with an in-memory exporter (PUT 200, 400, 415)', async () => {
    for (const gw of [rig.open, rig.keyed]) {
      const key = gw === rig.keyed ? KEYS.admin : undefined;
      expect((await gw.call('GET', '/v1/tracing', { key })).json()).toEqual({ enabled: false });
      expect((await gw.call('PUT', '/v1/tracing', { key, json: { sampleRatio: 0.5 } })).status).toBe(404);
    }
    // The tracer is the process's: installed here, it is every in-process gateway's until shut down.
    await installTracing({ enabled: true, url: null, sampleRatio: 0, exportDelayMs: 1_000 }, { service: 'edgeq-gateway' }, { exporter: new InMemorySpanExporter() });
    try {
      for (const gw of [rig.open, rig.keyed]) {
        const key = gw === rig.keyed ? KEYS.admin : undefined;
        expect((await gw.call('PUT', '/v1/tracing', { key, json: { sampleRatio: 0.01 } })).json()).toMatchObject({ enabled: true, sampleRatio: 0.01 });
        expect((await gw.call('GET', '/v1/tracing', { key })).json()).toMatchObject({ enabled: true, sampleRatio: 0.01, endpoint: null });
        expect((await gw.call('PUT', '/v1/tracing', { key, json: { sampleRatio: 2 } })).status).toBe(400);
        expect((await gw.call('PUT', '/v1/tracing', { key, body: 'sampleRatio=0.5', type: 'text/plain' })).status).toBe(415);
        expect((await gw.call('GET', '/v1/tracing', { key })).json()).toMatchObject({ sampleRatio: 0.01 });
      }
    } finally {
      await shutdownTracing();
    }
  });

  it('readyz: 503 while a partition has no leader', async () => {
    expect((await rig.open.call('POST', '/v1/topics', { json: { name: 'o-solo', partitions: 1, replicationFactor: 1 } })).status).toBe(201);
    let owner = -1;
    await eventually(() => (owner = rig.cell.leaderOf('o-solo', 0)) > 0, SETTLE_MS_MAX, 'o-solo to have a leader');
    await rig.cell.stopBroker(owner);
    await eventually(async () => (await rig.open.call('GET', '/readyz')).status === 503, SETTLE_MS_MAX, '/readyz to answer 503');
  }, 60_000);

  it('every documented (operation, status) was answered', () => {
    for (const key of NOT_DRIVEN.keys()) expect(contract.documents(key), `${key} is listed as not driven but not documented`).toBe(true);
    expect(contract.unexercised(new Set(NOT_DRIVEN.keys()))).toEqual([]);
  });
});
