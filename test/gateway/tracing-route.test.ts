// Proves the gateway's tracing routes on a real cell (one broker: sampling is decided at the
// gateway): GET shows the tracer as it runs; PUT changes the ratio of new traces at once, so a
// produce at 0 makes no span and carries no traceparent while one at 1 makes its `send` span; every
// bad body (wrong type, out of range, missing, unknown field, not JSON, not an object, wrong media
// type) is a typed 400/415 and leaves the ratio as it was; the admin grant is needed; with tracing
// off GET says so and PUT is 404 NOT_FOUND.
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Authenticator } from '../../src/gateway/index.ts';
import { activeTracer, installTracing, shutdownTracing, TRACE_HEADER, type ActiveTracer } from '../../src/tracing/index.ts';
import { GatewayOnCell } from './gateway-on-cell.ts';

const TOPIC = 'traced-orders';
const ADMIN = { authorization: 'Bearer admin-key' };
const WRITER = { authorization: 'Bearer writer-key' };
const sha = (k: string) => createHash('sha256').update(k).digest('hex');

let gw: GatewayOnCell;
let exporter: InMemorySpanExporter;
let tracer: ActiveTracer;

beforeAll(async () => {
  const auth = Authenticator.fromJson({
    keys: [
      { sha256: sha('admin-key'), tenant: 'ops', grants: [{ topic: '*', actions: ['read', 'write', 'admin'] }] },
      { sha256: sha('writer-key'), tenant: 'acme', grants: [{ topic: '*', actions: ['read', 'write'] }] },
    ],
  });
  gw = await GatewayOnCell.start({ auth, adminHeaders: ADMIN, cell: { size: 1 }, topics: [{ name: TOPIC, partitions: 1, replicationFactor: 1 }] });
});

afterAll(async () => {
  await shutdownTracing();
  await gw?.close();
});

async function install(sampleRatio: number): Promise<void> {
  exporter = new InMemorySpanExporter();
  tracer = (await installTracing({ enabled: true, url: null, sampleRatio, exportDelayMs: 50 }, { service: 'edgeq-gateway' }, { exporter }))!;
}

const req = (path: string, init: RequestInit & { headers?: Record<string, string> } = {}) => Promise.resolve(gw.app.request(path, init));
const get = async () => (await req('/v1/tracing', { headers: ADMIN })).json() as Promise<Record<string, unknown>>;
const put = (body: unknown, headers: Record<string, string> = { 'content-type': 'application/json', ...ADMIN }) =>
  req('/v1/tracing', { method: 'PUT', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });

/** Produces one record; gives its offset. */
async function produce(value: string): Promise<number> {
  const res = await req(`/v1/topics/${TOPIC}/records?acks=all`, { method: 'POST', headers: { 'content-type': 'application/json', ...WRITER }, body: JSON.stringify({ records: [{ value }] }) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { offsets: { offset: number }[] }).offsets[0]!.offset;
}

/** The header names of the record at `offset`, read back through the gateway. */
async function headersAt(offset: number): Promise<string[]> {
  const res = await req(`/v1/topics/${TOPIC}/partitions/0/records?offset=${offset}&maxRecords=1`, { headers: WRITER });
  expect(res.status).toBe(200);
  const [r] = ((await res.json()) as { records: { offset: number; headers: Record<string, string> | { key: string }[] }[] }).records;
  expect(r?.offset).toBe(offset);
  return Array.isArray(r!.headers) ? r!.headers.map((h) => h.key) : Object.keys(r!.headers);
}

describe('GET/PUT /v1/tracing', () => {
  it('with tracing off, GET says so and PUT is 404 NOT_FOUND naming the start-up flag', async () => {
    expect(activeTracer()).toBeNull();
    expect(await get()).toEqual({ enabled: false });
    const res = await put({ sampleRatio: 0.5 });
    expect(res.status).toBe(404);
    const problem = (await res.json()) as { code: string; detail: string };
    expect(problem.code).toBe('NOT_FOUND');
    expect(problem.detail).toContain('--otlp-endpoint');
    expect(activeTracer()).toBeNull();
  });

  it('PUT changes the ratio of new traces at once: 0 makes no span and no header, 1 makes the send span', async () => {
    await install(1);
    expect(await get()).toEqual({ enabled: true, sampleRatio: 1, endpoint: null, exportDelayMs: 50 });

    const set0 = await put({ sampleRatio: 0 });
    expect(set0.status).toBe(200);
    expect(await set0.json()).toMatchObject({ enabled: true, sampleRatio: 0 });
    const untraced = await produce('not sampled');
    await tracer.flush();
    expect(exporter.getFinishedSpans().filter((s) => s.name === `send ${TOPIC}`)).toHaveLength(0);
    expect(await headersAt(untraced)).not.toContain(TRACE_HEADER);

    expect((await put({ sampleRatio: 1 })).status).toBe(200);
    const traced = await produce('sampled');
    await tracer.flush();
    expect(exporter.getFinishedSpans().filter((s) => s.name === `send ${TOPIC}`)).toHaveLength(1);
    expect(await headersAt(traced)).toContain(TRACE_HEADER);
  });

  it('refuses every bad body with a typed error and leaves the ratio as it was', async () => {
    await install(0.25);
    const bad: [unknown, number, string][] = [
      [{ sampleRatio: '0.5' }, 400, 'INVALID_ARGUMENT'],
      [{ sampleRatio: -0.01 }, 400, 'INVALID_ARGUMENT'],
      [{ sampleRatio: 1.5 }, 400, 'INVALID_ARGUMENT'],
      [{ sampleRatio: null }, 400, 'INVALID_ARGUMENT'],
      [{ sampleRatio: true }, 400, 'INVALID_ARGUMENT'],
      [{ sampleRatio: [0.5] }, 400, 'INVALID_ARGUMENT'],
      [{}, 400, 'INVALID_ARGUMENT'],
      [{ sampleRatio: 0.5, endpoint: 'http://elsewhere' }, 400, 'INVALID_ARGUMENT'],
      ['{"sampleRatio": 0.5', 400, 'INVALID_ARGUMENT'],
      ['[0.5]', 400, 'INVALID_ARGUMENT'],
      ['1e999', 400, 'INVALID_ARGUMENT'],
    ];
    for (const [body, status, code] of bad) {
      const res = await put(body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(((await res.json()) as { code: string }).code, JSON.stringify(body)).toBe(code);
      expect(activeTracer()!.sampleRatio).toBe(0.25);
    }
    const wrongType = await put({ sampleRatio: 0.5 }, { 'content-type': 'text/plain', ...ADMIN });
    expect(wrongType.status).toBe(415);
    expect((await put({ sampleRatio: 0.5 }, { 'content-type': 'application/json', ...WRITER })).status).toBe(403);
    expect((await req('/v1/tracing', { headers: WRITER })).status).toBe(403);
    expect((await put({ sampleRatio: 0.5 }, { 'content-type': 'application/json' })).status).toBe(401);
    expect(activeTracer()!.sampleRatio).toBe(0.25);
    expect(await get()).toMatchObject({ sampleRatio: 0.25 });
  });
});
