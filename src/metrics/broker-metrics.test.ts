// Proves a real broker's GET /metrics over HTTP: produce and fetch counters move by exactly the
// records and bytes sent, produce latency and fsync histograms observe (and CellStatus carries the recent fsync p99), partition gauges match the
// log, the text is valid Prometheus exposition, and two brokers in one process keep apart; plus
// the under-replicated count over fake replicas that a lone broker cannot produce.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Broker, type BrokerOptions } from '../broker/index.ts';
import { buildBatch } from '../log/index.ts';
import { Acks } from '../protocol/index.ts';
import { RawClient, cleanupTempDirs, tempDir } from '../testing/index.ts';
import { BrokerMetrics } from './index.ts';

afterAll(cleanupTempDirs);

const brokers: Broker[] = [];
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(brokers.splice(0).map((b) => b.close()));
});

async function start(options: Partial<BrokerOptions> = {}): Promise<Broker> {
  const b = await Broker.start({ dataDir: await tempDir(), port: 0, adminPort: 0, ...options });
  brokers.push(b);
  return b;
}

async function client(b: Broker): Promise<RawClient> {
  const c = await RawClient.connect(b.port);
  clients.push(c);
  return c;
}

async function scrape(b: Broker): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${b.adminPort}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

/** The value of one sample: `name` with exactly `labels` (besides the broker's default label). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    delete got['broker'];
    const want = Object.entries(labels);
    if (want.length === Object.keys(got).length && want.every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return Number.NaN;
}

const batchOf = (n: number, size = 40): Promise<Buffer> => buildBatch(Array.from({ length: n }, (_, i) => ({ value: Buffer.alloc(size, 97 + i) })));

describe('broker metrics over the admin port', () => {
  it('counts produced and fetched records and bytes, times produces and fsyncs, and gauges each partition', async () => {
    const b = await start();
    const c = await client(b);
    const created = await c.call('CreateTopics', { topics: [{ name: 'ev', partitions: 2, replicationFactor: 1, config: { 'flush.policy': 'sync' } }] });
    expect(created.topics[0]!.error ?? null).toBeNull();
    const before = await scrape(b);
    const fsyncsBefore = sample(before, 'edgeq_fsync_latency_seconds_count');

    const sent = [
      { partition: 0, batch: await batchOf(3), acks: Acks.ALL },
      { partition: 0, batch: await batchOf(4, 100), acks: Acks.LEADER },
      { partition: 1, batch: await batchOf(2), acks: Acks.ALL },
    ];
    for (const s of sent) {
      const r = await c.call('Produce', { acks: s.acks, timeoutMs: 5000, topics: [{ name: 'ev', partitions: [{ partition: s.partition, records: s.batch }] }] });
      expect(r.topics[0]!.partitions[0]!.error ?? null).toBeNull();
    }
    const bytesSent = sent.reduce((n, s) => n + s.batch.length, 0);
    // replicaId -1 as the client library sends it: an absent field decodes as 0, a replica's id.
    const f = await c.call('Fetch', { replicaId: -1, maxWaitMs: 0, topics: [{ name: 'ev', partitions: [{ partition: 0, fetchOffset: 0, maxBytes: 1 << 20 }, { partition: 1, fetchOffset: 0, maxBytes: 1 << 20 }] }] });
    const bytesFetched = f.topics[0]!.partitions.reduce((n, p) => n + p.records.length, 0);
    expect(bytesFetched).toBe(bytesSent);

    const after = await scrape(b);
    expect(sample(after, 'edgeq_produce_records_total') - sample(before, 'edgeq_produce_records_total')).toBe(9);
    expect(sample(after, 'edgeq_produce_bytes_total') - sample(before, 'edgeq_produce_bytes_total')).toBe(bytesSent);
    expect(sample(after, 'edgeq_fetch_records_total', { replica: 'false' })).toBe(9);
    expect(sample(after, 'edgeq_fetch_bytes_total', { replica: 'false' })).toBe(bytesSent);
    expect(sample(after, 'edgeq_fetch_responses_total', { replica: 'false' })).toBe(1);
    expect(sample(after, 'edgeq_produce_latency_seconds_count', { acks: 'all' })).toBe(2);
    expect(sample(after, 'edgeq_produce_latency_seconds_count', { acks: '1' })).toBe(1);
    expect(sample(after, 'edgeq_produce_latency_seconds_bucket', { acks: 'all', le: '+Inf' })).toBe(2);
    // Every append to a sync topic is followed by an fdatasync before it is acknowledged.
    expect(sample(after, 'edgeq_fsync_latency_seconds_count') - fsyncsBefore).toBeGreaterThanOrEqual(sent.length);
    expect(sample(after, 'edgeq_fsync_latency_seconds_sum')).toBeGreaterThan(0);
    // CellStatus carries the p99 of the last seconds' fsyncs (the gateways' load signal): one of
    // those fsyncs, so above 0 and at most their sum.
    const cellStatus = await c.call('CellStatus', {});
    expect(cellStatus.fsyncP99Ms).toBeGreaterThan(0);
    expect(cellStatus.fsyncP99Ms).toBeLessThanOrEqual(sample(after, 'edgeq_fsync_latency_seconds_sum') * 1000);
    expect(sample(after, 'edgeq_log_append_bytes_total') - sample(before, 'edgeq_log_append_bytes_total')).toBe(bytesSent);
    // The fetch read what was just written: from the tail cache, not the files.
    const readBytes = (text: string, source: string) => sample(text, 'edgeq_log_read_bytes_total', { source }) || 0;
    expect(readBytes(after, 'cache') - readBytes(before, 'cache')).toBe(bytesFetched);
    expect(readBytes(after, 'file') - readBytes(before, 'file')).toBe(0);

    for (const [partition, end] of [['0', 7], ['1', 2]] as const) {
      const labels = { topic: 'ev', partition };
      expect(sample(after, 'edgeq_partition_log_end_offset', labels)).toBe(end);
      expect(sample(after, 'edgeq_partition_high_watermark', labels)).toBe(sample(after, 'edgeq_partition_log_end_offset', labels));
      expect(sample(after, 'edgeq_partition_isr_size', labels)).toBe(1);
      expect(sample(after, 'edgeq_partition_leader', labels)).toBe(1);
    }
    expect(sample(after, 'edgeq_under_replicated_partitions')).toBe(0);
    expect(sample(after, 'edgeq_event_loop_delay_seconds', { quantile: '0.99' })).toBeGreaterThanOrEqual(0);
    expect(sample(after, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(after).toContain('nodejs_eventloop_lag_seconds');

    // A deleted topic's gauges disappear at the next scrape rather than freezing.
    await c.call('DeleteTopics', { names: ['ev'] });
    expect(await scrape(b)).not.toContain('topic="ev"');
  });

  it('serves valid Prometheus text exposition, and only GET /metrics', async () => {
    const b = await start();
    const c = await client(b);
    await c.call('CreateTopics', { topics: [{ name: 'fmt', partitions: 1, replicationFactor: 1 }] });
    await c.call('Produce', { acks: Acks.ALL, timeoutMs: 5000, topics: [{ name: 'fmt', partitions: [{ partition: 0, records: await batchOf(1) }] }] });
    const text = await scrape(b);
    const typed = new Map<string, string>();
    const lines = text.split('\n');
    expect(lines.at(-1)).toBe('');
    for (const line of lines.slice(0, -1)) {
      const help = /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .*$/.exec(line);
      const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
      const label = String.raw`[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"`;
      // Values are what Go's strconv.ParseFloat reads, so NaN and Inf in any case: prom-client
      // writes "Nan" for the event-loop lag mean when scraped before its histogram has a sample.
      const value = String.raw`(?:[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|[+-]?[Ii][Nn][Ff]|[Nn][Aa][Nn])`;
      const s = new RegExp(String.raw`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{${label}(?:,${label})*,?\})? ${value}(?: -?\d+)?$`).exec(line);
      if (type) typed.set(type[1]!, type[2]!);
      // The format ignores empty lines (prom-client puts one between families).
      if (help || type || line === '') continue;
      expect(s, `not a sample line: ${line}`).not.toBeNull();
      // Every sample belongs to a family declared with # TYPE (histograms add suffixes).
      const family = s![1]!.replace(/_(bucket|sum|count)$/, '');
      expect(typed.has(s![1]!) || typed.has(family), `no # TYPE for ${s![1]}`).toBe(true);
    }
    expect(typed.get('edgeq_produce_latency_seconds')).toBe('histogram');
    expect(typed.get('edgeq_partition_high_watermark')).toBe('gauge');
    expect(typed.get('edgeq_produce_records_total')).toBe('counter');

    expect((await fetch(`http://127.0.0.1:${b.adminPort}/`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${b.adminPort}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('keeps brokers in one process apart, and serves no admin port unless asked', async () => {
    const a = await start();
    const b = await start({ brokerId: 2 });
    const none = await start({ adminPort: undefined });
    expect(none.adminPort).toBeNull();
    expect(none.metrics).toBeInstanceOf(BrokerMetrics);
    const c = await client(a);
    await c.call('CreateTopics', { topics: [{ name: 'only-a', partitions: 1, replicationFactor: 1 }] });
    await c.call('Produce', { acks: Acks.ALL, timeoutMs: 5000, topics: [{ name: 'only-a', partitions: [{ partition: 0, records: await batchOf(5) }] }] });
    const ta = await scrape(a);
    const tb = await scrape(b);
    expect(sample(ta, 'edgeq_produce_records_total')).toBe(5);
    expect(sample(tb, 'edgeq_produce_records_total')).toBe(0);
    expect(tb).not.toContain('only-a');
    expect(ta).toContain('broker="1"');
    expect(tb).toContain('broker="2"');
    // Scraped in-process too, without the admin port.
    expect(sample(await none.metrics.scrape(), 'edgeq_produce_records_total')).toBe(0);
  });

  it('does not count an idempotent retry twice', async () => {
    const b = await start();
    const c = await client(b);
    await c.call('CreateTopics', { topics: [{ name: 'idem', partitions: 1, replicationFactor: 1 }] });
    const pid = await c.call('InitProducerId', { producerId: -1 });
    const batch = await buildBatch([{ value: 'x' }, { value: 'y' }], { producerId: pid.producerId, producerEpoch: pid.producerEpoch, baseSequence: 0 });
    for (let i = 0; i < 2; i++) {
      const r = await c.call('Produce', { acks: Acks.ALL, timeoutMs: 5000, topics: [{ name: 'idem', partitions: [{ partition: 0, records: batch }] }] });
      expect(r.topics[0]!.partitions[0]!.baseOffset).toBe(0);
    }
    const text = await scrape(b);
    expect(sample(text, 'edgeq_produce_records_total')).toBe(2);
    expect(sample(text, 'edgeq_produce_bytes_total')).toBe(batch.length);
    expect(sample(text, 'edgeq_produce_latency_seconds_count', { acks: 'all' })).toBe(2);
  });

  it('counts under-replicated partitions among those led here, from the replicas at scrape time', async () => {
    const m = new BrokerMetrics({ processMetrics: false });
    const parts = [
      { topic: 'a', index: 0, highWatermark: 5, logEndOffset: 7, isr: [1], replicas: [1, 2, 3], role: 'leader' },
      { topic: 'a', index: 1, highWatermark: 5, logEndOffset: 5, isr: [1, 2, 3], replicas: [1, 2, 3], role: 'leader' },
      { topic: 'a', index: 2, highWatermark: 4, logEndOffset: 4, isr: [2], replicas: [1, 2, 3], role: 'follower' },
    ];
    m.watchPartitions({ localPartitions: () => parts });
    m.recordFetch(3, 300, true);
    let text = await m.scrape();
    expect(sample(text, 'edgeq_under_replicated_partitions')).toBe(1);
    expect(sample(text, 'edgeq_partition_leader', { topic: 'a', partition: '2' })).toBe(0);
    expect(sample(text, 'edgeq_partition_high_watermark', { topic: 'a', partition: '0' })).toBe(5);
    expect(sample(text, 'edgeq_partition_log_end_offset', { topic: 'a', partition: '0' })).toBe(7);
    expect(sample(text, 'edgeq_fetch_bytes_total', { replica: 'true' })).toBe(300);
    expect(sample(text, 'edgeq_fetch_responses_total', { replica: 'true' })).toBe(1);
    expect(text).not.toContain('process_cpu');
    parts[0]!.isr = [1, 2];
    parts.pop();
    text = await m.scrape();
    expect(sample(text, 'edgeq_under_replicated_partitions')).toBe(1);
    expect(text).not.toContain('partition="2"');
    m.close();
  });
});
