// Proves the spans of a record's path inside one region with an in-memory exporter: a produce
// through the gateway app over a real in-process cell of 3 brokers (replication factor 3,
// acks=all) gives send → append and commit at the leader → replicate at each of the two
// followers → receive at the read, all in the produce's trace; a produce that was not sampled
// writes no traceparent and makes no span anywhere on the path; a consumer group poll makes a
// receive span named by its group.
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { waitFor } from '../../src/testing/index.ts';
import { installTracing, shutdownTracing, type ActiveTracer } from '../../src/tracing/index.ts';
import { GatewayOnCell } from '../gateway/gateway-on-cell.ts';

let gw: GatewayOnCell;
let exporter: InMemorySpanExporter;
let tracer: ActiveTracer;

beforeAll(async () => {
  exporter = new InMemorySpanExporter();
  // Ratio 0: only produces that arrive with a sampled traceparent are followed (parent-based).
  tracer = (await installTracing({ enabled: true, url: null, sampleRatio: 0, exportDelayMs: 50 }, { service: 'edgeq-test' }, { exporter }))!;
  gw = await GatewayOnCell.start({ topics: [{ name: 'cell-traced', partitions: 1, replicationFactor: 3 }], processMetrics: false });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await shutdownTracing();
});

/** Waits (bounded) until the spans of `traceId` include every name of `names`; the broker spans come after an async decode. */
async function spansOf(traceId: string, names: string[], count: Record<string, number> = {}): Promise<ReadableSpan[]> {
  // A follower fetch waits up to replicaFetchWaitMs (200 ms) for data; 10 s is room for a loaded machine.
  return waitFor(`spans ${names.join(', ')}`, 10_000, async () => {
    await tracer.flush();
    const mine = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    return names.every((n) => mine.filter((s) => s.name === n).length >= (count[n] ?? 1)) ? mine : undefined;
  }, 20);
}

it('send, append, commit, replicate on both followers and receive form the produce trace', async () => {
  const traceId = 'c0ffee00c0ffee00c0ffee00c0ffee00';
  const res = await gw.app.request('/v1/topics/cell-traced/records?acks=all', {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-1234567890abcdef-01` },
    body: JSON.stringify({ records: [{ value: 'one' }, { value: 'two' }] }),
  });
  expect(res.status).toBe(200);
  const read = await gw.app.request('/v1/topics/cell-traced/partitions/0/records?offset=0');
  const body = (await read.json()) as { records: { headers: Record<string, string> }[] };
  expect(body.records).toHaveLength(2);
  const spans = await spansOf(traceId, ['send cell-traced', 'append cell-traced', 'commit cell-traced', 'replicate cell-traced', 'receive cell-traced'], { 'replicate cell-traced': 2 });
  const send = spans.find((s) => s.name === 'send cell-traced')!;
  expect(send.parentSpanContext?.spanId).toBe('1234567890abcdef');
  for (const r of body.records) expect(r.headers['traceparent']).toBe(`00-${traceId}-${send.spanContext().spanId}-01`);
  const append = spans.find((s) => s.name === 'append cell-traced')!;
  const leader = append.attributes['edgeq.broker.id'];
  expect(append.attributes).toMatchObject({ 'messaging.batch.message_count': 2, 'edgeq.offset': 0, 'edgeq.acks': 'all' });
  expect(spans.find((s) => s.name === 'commit cell-traced')!.attributes).toMatchObject({ 'edgeq.isr.size': 3, 'edgeq.broker.id': leader });
  const followers = spans.filter((s) => s.name === 'replicate cell-traced').map((s) => s.attributes['edgeq.broker.id']);
  expect(new Set(followers).size).toBe(2);
  expect(followers).not.toContain(leader);
  for (const s of spans.filter((x) => x !== send)) {
    expect(s.parentSpanContext?.spanId, s.name).toBe(send.spanContext().spanId);
    expect(s.attributes, s.name).toMatchObject({ 'messaging.system': 'edgeq', 'messaging.destination.name': 'cell-traced', 'messaging.destination.partition.id': '0' });
  }
  const receive = spans.find((s) => s.name === 'receive cell-traced')!;
  expect(receive.links.map((l) => l.context.spanId)).toEqual([send.spanContext().spanId]);
}, 30_000);

it('a produce that was not sampled carries no traceparent and makes no span', async () => {
  exporter.reset();
  const res = await gw.app.request('/v1/topics/cell-traced/records?acks=all', {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: '00-0badc0de0badc0de0badc0de0badc0d-1234567890abcdef-00' },
    body: JSON.stringify({ records: [{ value: 'three' }] }),
  });
  expect(res.status).toBe(200);
  const { offsets } = (await res.json()) as { offsets: { offset: number }[] };
  const read = await gw.app.request(`/v1/topics/cell-traced/partitions/0/records?offset=${offsets[0]!.offset}`);
  const body = (await read.json()) as { records: { headers: Record<string, string> }[] };
  expect(body.records[0]!.headers).toEqual({});
  // A sampled produce after it is followed: once its spans are out, the unsampled one's would be too.
  const res2 = await gw.app.request('/v1/topics/cell-traced/records?acks=all', {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: '00-feedfeedfeedfeedfeedfeedfeedfeed-1234567890abcdef-01' },
    body: JSON.stringify({ records: [{ value: 'four' }] }),
  });
  expect(res2.status).toBe(200);
  await spansOf('feedfeedfeedfeedfeedfeedfeedfeed', ['send cell-traced', 'append cell-traced', 'commit cell-traced', 'replicate cell-traced'], { 'replicate cell-traced': 2 });
  expect(exporter.getFinishedSpans().filter((s) => s.spanContext().traceId !== 'feedfeedfeedfeedfeedfeedfeedfeed')).toEqual([]);
}, 30_000);

it('a consumer group poll through the gateway makes a receive span named by its group, linked to the send', async () => {
  const traceId = 'ab5e17edab5e17edab5e17edab5e17ed';
  const res = await gw.app.request('/v1/topics/cell-traced/records?acks=all', {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-1234567890abcdef-01` },
    body: JSON.stringify({ records: [{ value: 'grouped' }] }),
  });
  expect(res.status).toBe(200);
  const joined = await gw.app.request('/v1/groups/traced-readers/members', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ topics: ['cell-traced'], fromBeginning: true }) });
  expect(joined.status).toBe(201);
  const { memberId } = (await joined.json()) as { memberId: string };
  // Right after joining a poll may answer nothing (the assignment is settling): poll until the record comes, bounded.
  await waitFor('the group to deliver the traced record', 20_000, async () => {
    const poll = await gw.app.request(`/v1/groups/traced-readers/members/${memberId}/records?waitMs=500`);
    const { records } = (await poll.json()) as { records: { value: string }[] };
    return records.some((r) => r.value === 'grouped') ? true : undefined;
  }, 10);
  const [send] = (await spansOf(traceId, ['send cell-traced'])).filter((s) => s.name === 'send cell-traced');
  // The poll returned the earlier tests' traced records too: its span's parent is the first one's
  // context (another trace), and it links to every creation context it returned, this send's among them.
  const receive = await waitFor('the group poll\'s receive span', 10_000, async () => {
    await tracer.flush();
    return exporter.getFinishedSpans().find((s) => s.name === 'receive cell-traced' && s.attributes['messaging.consumer.group.name'] === 'traced-readers' && s.links.some((l) => l.context.spanId === send!.spanContext().spanId));
  }, 20);
  expect(receive.attributes).toMatchObject({ 'messaging.operation.type': 'receive', 'messaging.destination.partition.id': '0' });
  expect((await gw.app.request(`/v1/groups/traced-readers/members/${memberId}`, { method: 'DELETE' })).status).toBe(204);
}, 40_000);
