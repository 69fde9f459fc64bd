// Proves the gateway's GET /metrics serves its own registry's Prometheus text, with request counters labelled by route pattern (not raw path), method and status, request and produce latency histograms, produce record/byte counters by acks, event-loop delay and process metrics.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeqClient } from '../../src/client/index.ts';
import { createGatewayApp, type GatewayApp } from '../../src/gateway/index.ts';
import { GatewayOnCell } from './gateway-on-cell.ts';

const TOPIC = 'gw-metrics';

let gw: GatewayOnCell;
let client: EdgeqClient;
let app: GatewayApp;

beforeAll(async () => {
  gw = await GatewayOnCell.start({ topics: [{ name: TOPIC, partitions: 1 }] });
  ({ client, app } = gw);
});

afterAll(async () => gw?.close());

/** Scrapes and parses `name{labels} value` lines into a map from the series text to its value. */
async function scrape(): Promise<Map<string, number>> {
  const res = await app.request('/metrics');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  const out = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

const value = (m: Map<string, number>, series: string): number => m.get(series) ?? 0;

describe('GET /metrics', () => {
  it('counts requests by route pattern and status, and produce records, bytes and latency by acks', async () => {
    const before = await scrape();
    const produce = (acks: string) =>
      app.request(`/v1/topics/${TOPIC}/records?acks=${acks}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ records: [{ key: 'k', value: 'hello' }, { value: 'abc' }] }) });
    expect((await produce('all')).status).toBe(200);
    expect((await produce('1')).status).toBe(200);
    expect((await produce('all')).status).toBe(200);
    expect((await app.request(`/v1/topics/${TOPIC}`)).status).toBe(200);
    expect((await app.request('/v1/topics/no-such-a')).status).toBe(404);
    expect((await app.request('/v1/topics/no-such-b')).status).toBe(404);
    expect((await app.request('/v2/nothing/here')).status).toBe(404);
    const after = await scrape();

    const moved = (series: string) => value(after, series) - value(before, series);
    expect(moved('edgeq_http_requests_total{route="/v1/topics/:name/records",method="POST",status="200"}')).toBe(3);
    expect(moved('edgeq_http_requests_total{route="/v1/topics/:name",method="GET",status="200"}')).toBe(1);
    expect(moved('edgeq_http_requests_total{route="/v1/topics/:name",method="GET",status="404"}')).toBe(2);
    expect(moved('edgeq_http_requests_total{route="unmatched",method="GET",status="404"}')).toBe(1);
    // The raw paths never become label values.
    expect([...after.keys()].some((k) => k.includes('no-such') || k.includes('/v2/nothing'))).toBe(false);
    expect(moved('edgeq_http_request_duration_seconds_count{route="/v1/topics/:name/records",method="POST"}')).toBe(3);

    expect(moved('edgeq_gateway_produce_records_total{acks="all"}')).toBe(4);
    expect(moved('edgeq_gateway_produce_records_total{acks="1"}')).toBe(2);
    // key "k" (1) + "hello" (5) + "abc" (3) per request.
    expect(moved('edgeq_gateway_produce_bytes_total{acks="all"}')).toBe(18);
    expect(moved('edgeq_gateway_produce_latency_seconds_count{acks="all"}')).toBe(2);
    expect(moved('edgeq_gateway_produce_latency_seconds_count{acks="1"}')).toBe(1);

    expect(after.has('edgeq_event_loop_delay_seconds{quantile="0.99"}')).toBe(true);
    expect(after.has('process_cpu_user_seconds_total')).toBe(true);
    expect([...after.keys()].some((k) => k.startsWith('nodejs_eventloop_lag'))).toBe(true);
    // The scrape itself is counted on the next one.
    expect(value(await scrape(), 'edgeq_http_requests_total{route="/metrics",method="GET",status="200"}')).toBeGreaterThanOrEqual(2);
  });

  it('keeps each app in its own registry', async () => {
    const other = createGatewayApp({ client, processMetrics: false });
    try {
      await other.request('/healthz');
      const text = await (await other.request('/metrics')).text();
      expect(text).toContain('edgeq_http_requests_total{route="/healthz",method="GET",status="200"} 1');
      expect(text).not.toContain('process_cpu_user_seconds_total');
      expect(text).not.toContain('/v1/topics/:name/records');
    } finally {
      await other.close();
    }
  });
});
