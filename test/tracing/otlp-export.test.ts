// Proves the export path in one process: with an endpoint configured, a traced send reaches an
// OTLP/HTTP receiver on 127.0.0.1 through the real exporter (JSON body), with the ids, kind,
// resource and messaging attributes the multi-region test relies on; with none, nothing is sent.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { waitFor } from '../../src/testing/index.ts';
import { activeTracer, installTracing, resolveTracingConfig, shutdownTracing, traceSend, TRACE_HEADER } from '../../src/tracing/index.ts';
import { OTLP_KIND, OtlpReceiver } from './otlp-receiver.ts';

let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await OtlpReceiver.start();
});
afterAll(async () => {
  await shutdownTracing();
  await receiver.close();
});

it('spans reach the OTLP/HTTP receiver as JSON, and nothing is sent with no endpoint', async () => {
  expect(await installTracing(resolveTracingConfig({ env: {} }), { service: 'edgeq-gateway' })).toBeNull();
  expect(activeTracer()).toBeNull();

  const config = resolveTracingConfig({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '50' } });
  const t = (await installTracing(config, { service: 'edgeq-gateway', region: 'us-east', instance: 'us-east-gw' }))!;
  let header = '';
  await traceSend('web', '00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bbbbbbbbbbbbbbbb-01', [{ headers: {} as Record<string, Buffer> }], async (rs) => {
    header = rs[0]!.headers[TRACE_HEADER]!.toString();
    return [{ partition: 1, offset: 5 }];
  });
  await t.flush();
  // Flushed: the receiver has answered the export by the time flush resolves; the wait is only
  // for its bookkeeping (bounded at 5 s).
  const [span] = await waitFor('the exported span', 5_000, () => (receiver.spans.length > 0 ? receiver.spans : undefined));
  expect(receiver.rejected).toBe(0);
  expect(span).toMatchObject({
    traceId: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
    parentSpanId: 'bbbbbbbbbbbbbbbb',
    name: 'send web',
    kind: OTLP_KIND.producer,
    attributes: { 'messaging.system': 'edgeq', 'messaging.destination.name': 'web', 'messaging.operation.type': 'send', 'messaging.destination.partition.id': '1', 'edgeq.offset': 5 },
    resource: { 'service.name': 'edgeq-gateway', 'edgeq.region': 'us-east', 'service.instance.id': 'us-east-gw' },
  });
  expect(header).toBe(`00-${span!.traceId}-${span!.spanId}-01`);
});
