// Proves tracing end to end with real processes: a 2-region `edgeq dev` (1 broker per region,
// 25 ms one way between them) exporting to an OTLP/HTTP receiver started here. One produce
// through region A's gateway and its consumption through region B's gateway form one trace:
// send (A's gateway) → append and commit (A's broker) → apply (B's exchange) → append and commit
// (B's broker) → receive (B's gateway, linked to the send), each with the messaging attributes.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { waitFor } from '../../src/testing/index.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs } from '../helpers/dev-process.ts';
import { Geo } from '../helpers/geo.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';
import { OTLP_KIND, OtlpReceiver, type ReceivedSpan } from './otlp-receiver.ts';

/** Export interval of every process: a span reaches the receiver within ~0.2 s of its end. */
const EXPORT_DELAY_MS = 200;
/**
 * Bound on the whole path after the produce answered: the exchange's fetch wait (0.5 s) + 2 WAN
 * hops (50 ms) + B's acks=all append, + one export interval per process (0.2 s): ~1 s on an idle
 * machine; 30 s leaves room for 2 cores shared with other test files.
 */
const PATH_MS = 30_000;

let receiver: OtlpReceiver;
let geo: Geo;
let A: string, B: string;

beforeAll(async () => {
  receiver = await OtlpReceiver.start();
  const base = await freeRange(DEV_REGIONS_PORT_SPAN);
  const dev = startDevRegions(await tempDir('edgeq-trace-'), base, {
    regions: '2',
    brokersPerRegion: 1,
    wanLatencyMs: 25,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER_ARG: '1', OTEL_BSP_SCHEDULE_DELAY: String(EXPORT_DELAY_MS) },
  });
  geo = new Geo(await dev.ready);
  [A, B] = geo.regions as [string, string];
  await geo.waitForExchanges(60_000);
}, 180_000);

afterAll(async () => {
  await stopAllDevs();
  await receiver?.close();
  await cleanupTempDirs();
});

it('a produce in region A and its consumption in region B form one trace with the expected spans and links', async () => {
  await geo.createGlobal(A, 'traced', 1);
  // The client's own context: the whole path must join this trace.
  const traceId = randomBytes(16).toString('hex');
  const clientSpanId = randomBytes(8).toString('hex');
  const produced = await fetch(`${geo.gateway(A)}/v1/topics/traced/records?acks=all`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${clientSpanId}-01` },
    body: JSON.stringify({ records: [{ key: 'k', value: 'hello' }] }),
    signal: AbortSignal.timeout(30_000),
  });
  expect(produced.status).toBe(200);
  const { offsets } = (await produced.json()) as { offsets: { partition: number; offset: number }[] };
  const offset = offsets[0]!.offset;

  // Consumed in B once the exchange applied it (no traceparent on the read: the record's own
  // context makes the receive part of the trace).
  const read = await waitFor('the record in B', PATH_MS, async () => {
    const r = await geo.call(B, 'GET', `/v1/topics/traced/partitions/0/records?offset=0&waitMs=500`);
    return r.status === 200 && r.json.records.some((x: { originRegion: string; originOffset: number }) => x.originRegion === A && x.originOffset === offset) ? r.json : undefined;
  }, 100);
  const record = read.records.find((x: { originRegion: string }) => x.originRegion === A);
  expect(record.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));

  const service = (s: ReceivedSpan) => `${String(s.resource['service.name'])}@${String(s.resource['edgeq.region'])}`;
  const find = (spans: ReceivedSpan[], name: string, where: string) => spans.find((s) => s.name === name && service(s) === where);
  const expected: [string, string][] = [
    ['send traced', `edgeq-gateway@${A}`],
    ['append traced', `edgeq-broker@${A}`],
    ['commit traced', `edgeq-broker@${A}`],
    ['apply traced', `edgeq-gateway@${B}`],
    ['append traced', `edgeq-broker@${B}`],
    ['commit traced', `edgeq-broker@${B}`],
    ['receive traced', `edgeq-gateway@${B}`],
  ];
  const spans = await waitFor('every span of the trace', PATH_MS, () => {
    const got = receiver.trace(traceId);
    return expected.every(([name, where]) => find(got, name, where)) ? got : undefined;
  }, 100).catch(() => {
    throw new Error(`spans of the trace: ${JSON.stringify(receiver.trace(traceId).map((s) => `${s.name} ${service(s)}`))}`);
  });
  expect(receiver.rejected).toBe(0);

  const send = find(spans, 'send traced', `edgeq-gateway@${A}`)!;
  expect(send.parentSpanId).toBe(clientSpanId);
  expect(send.kind).toBe(OTLP_KIND.producer);
  expect(send.attributes).toMatchObject({ 'messaging.system': 'edgeq', 'messaging.destination.name': 'traced', 'messaging.operation.type': 'send', 'messaging.destination.partition.id': '0', 'edgeq.offset': offset });
  // The record carries the send span's context: its creation context.
  expect(record.headers.traceparent).toBe(`00-${traceId}-${send.spanId}-01`);

  // Every later span is a child of that creation context, in the same trace.
  for (const [name, where] of expected.slice(1)) {
    const s = find(spans, name, where)!;
    expect(s.parentSpanId, `${name} ${where}`).toBe(send.spanId);
    expect(s.attributes, `${name} ${where}`).toMatchObject({ 'messaging.system': 'edgeq', 'messaging.destination.name': 'traced', 'messaging.destination.partition.id': '0' });
    expect(s.startMs, `${name} ${where} starts after the send`).toBeGreaterThanOrEqual(send.startMs - 50);
  }
  expect(find(spans, 'append traced', `edgeq-broker@${A}`)!.attributes).toMatchObject({ 'messaging.operation.name': 'append', 'edgeq.offset': offset, 'edgeq.acks': 'all' });
  expect(find(spans, 'commit traced', `edgeq-broker@${A}`)!.attributes).toMatchObject({ 'messaging.operation.name': 'commit', 'edgeq.isr.size': 1 });
  expect(find(spans, 'apply traced', `edgeq-gateway@${B}`)!.attributes).toMatchObject({ 'messaging.operation.name': 'apply', 'edgeq.origin.region': A, 'edgeq.origin.offset': offset, 'edgeq.offset': record.offset });
  expect(find(spans, 'append traced', `edgeq-broker@${B}`)!.attributes).toMatchObject({ 'edgeq.origin.region': A, 'edgeq.origin.offset': offset, 'edgeq.offset': record.offset });
  const receive = find(spans, 'receive traced', `edgeq-gateway@${B}`)!;
  expect(receive.kind).toBe(OTLP_KIND.consumer);
  expect(receive.attributes).toMatchObject({ 'messaging.operation.type': 'receive' });
  expect(receive.links).toContainEqual({ traceId, spanId: send.spanId });
  // The record was committed in B before B's gateway could read it.
  expect(receive.endMs).toBeGreaterThanOrEqual(find(spans, 'commit traced', `edgeq-broker@${B}`)!.endMs - 50);
}, 120_000);
