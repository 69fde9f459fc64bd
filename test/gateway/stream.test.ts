// Proves the SSE stream route sends a partition's records in offset order with id = offset from the asked offset, sends heartbeats while idle, frees its slot when the client goes away or the gateway stops, resumes after Last-Event-ID, refuses streams past streamsMax with 429, and refuses bad parameters, offsets past the end and unknown topics with problem+json.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/cell.ts';
import type { GatewayApp } from '../../src/gateway/index.ts';
import { GatewayOnCell } from './gateway-on-cell.ts';

const TOPIC = 'gw-stream';
const LIMITS = { streamsMax: 2, streamHeartbeatMs: 300 };

let gw: GatewayOnCell;
let app: GatewayApp;

beforeAll(async () => {
  gw = await GatewayOnCell.start({ limits: LIMITS, topics: [{ name: TOPIC, partitions: 2 }] });
  ({ app } = gw);
});

afterAll(async () => gw?.close());

interface SseEvent {
  id?: string;
  event?: string;
  data?: string;
}

/** Reads SSE frames from `res` until `until` says stop (or `timeoutMs` passes), then cancels the body like a client going away. */
async function readEvents(res: Response, until: (events: SseEvent[], comments: number) => boolean, timeoutMs = 10_000): Promise<{ events: SseEvent[]; comments: number }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const events: SseEvent[] = [];
  let comments = 0;
  let buf = '';
  const deadline = Date.now() + timeoutMs;
  try {
    while (!until(events, comments)) {
      if (Date.now() > deadline) throw new Error(`timed out with ${events.length} events`);
      const { done, value } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buf.indexOf('\n\n')) >= 0) {
        const frame = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const ev: SseEvent = {};
        let isComment = true;
        for (const line of frame.split('\n')) {
          if (line.startsWith(':')) continue;
          isComment = false;
          const i = line.indexOf(':');
          const field = line.slice(0, i) as keyof SseEvent;
          const val = line.slice(i + 1).replace(/^ /, '');
          ev[field] = field === 'data' && ev.data !== undefined ? `${ev.data}\n${val}` : val;
        }
        if (isComment) comments++;
        else events.push(ev);
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return { events, comments };
}

async function produce(values: string[], partition: number): Promise<number[]> {
  const res = await app.request(`/v1/topics/${TOPIC}/records?acks=all`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ records: values.map((value, i) => ({ key: `k${i}`, value, headers: { n: String(i) }, partition })) }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { offsets: { offset: number }[] }).offsets.map((o) => o.offset);
}

describe('SSE stream', () => {
  it('streams records from the asked offset in order, including ones produced after it started', async () => {
    const first = await produce(['a', 'b', 'c', 'd'], 0);
    const res = await app.request(`/v1/topics/${TOPIC}/partitions/0/stream?offset=${first[1]}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reading = readEvents(res, (events) => events.length >= 5);
    const later = await produce(['e', 'f'], 0);
    const { events } = await reading;
    const expected = [first[1]!, first[2]!, first[3]!, later[0]!, later[1]!];
    expect(events.map((e) => Number(e.id))).toEqual(expected);
    const data = events.map((e) => JSON.parse(e.data!) as { offset: number; key: string; value: string; headers: Record<string, string>; timestamp: number });
    expect(data.map((d) => d.value)).toEqual(['b', 'c', 'd', 'e', 'f']);
    expect(data.map((d) => d.offset)).toEqual(expected);
    expect(data[0]).toMatchObject({ key: 'k1', headers: { n: '1' } });
    expect(data[0]!.timestamp).toBeGreaterThan(0);
  });

  it('sends heartbeat comments while idle, and frees its slot when the client goes away', async () => {
    const hw = await produce(['x'], 1);
    const res = await app.request(`/v1/topics/${TOPIC}/partitions/1/stream?offset=${hw[0]! + 1}`);
    const { events, comments } = await readEvents(res, (_e, n) => n >= 2);
    expect(events).toEqual([]);
    expect(comments).toBeGreaterThanOrEqual(2);
    // Both slots free again: two streams open at once succeed after the first was cancelled.
    await eventually(async () => {
      const a = await app.request(`/v1/topics/${TOPIC}/partitions/1/stream?offset=0`);
      const b = await app.request(`/v1/topics/${TOPIC}/partitions/1/stream?offset=0`);
      const ok = a.status === 200 && b.status === 200;
      await a.body?.cancel();
      await b.body?.cancel();
      return ok;
    }, 5_000, 'slots released');
  });

  it('resumes after Last-Event-ID when no offset is given', async () => {
    const offsets = await produce(['r1', 'r2'], 1);
    const res = await app.request(`/v1/topics/${TOPIC}/partitions/1/stream`, { headers: { 'last-event-id': String(offsets[0]) } });
    const { events } = await readEvents(res, (e) => e.length >= 1);
    expect(events[0]!.id).toBe(String(offsets[1]));
  });

  it('ends open streams on endStreams() (shutdown), freeing their slots', async () => {
    const res = await app.request(`/v1/topics/${TOPIC}/partitions/0/stream?offset=0`);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    app.endStreams();
    const deadline = Date.now() + 5_000;
    for (;;) {
      const { done } = await reader.read();
      if (done) break;
      if (Date.now() > deadline) throw new Error('stream did not end');
    }
  });

  it('answers 429 THROTTLED with Retry-After beyond streamsMax', async () => {
    const open = [await app.request(`/v1/topics/${TOPIC}/partitions/0/stream?offset=0`), await app.request(`/v1/topics/${TOPIC}/partitions/1/stream?offset=0`)];
    try {
      expect(open.map((r) => r.status)).toEqual([200, 200]);
      const refused = await app.request(`/v1/topics/${TOPIC}/partitions/0/stream?offset=0`);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('5');
      expect(await refused.json()).toMatchObject({ code: 'THROTTLED', retriable: true });
    } finally {
      for (const r of open) await r.body?.cancel();
    }
  });

  it('refuses a bad offset with 400, an offset past the end with 416 and an unknown topic or partition with 404, as problem+json', async () => {
    for (const q of ['offset=-1', 'offset=abc', 'offset=1.5']) {
      const res = await app.request(`/v1/topics/${TOPIC}/partitions/0/stream?${q}`);
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(await res.json()).toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    const past = await app.request(`/v1/topics/${TOPIC}/partitions/0/stream?offset=999999`);
    expect(past.status).toBe(416);
    expect(await past.json()).toMatchObject({ code: 'OFFSET_OUT_OF_RANGE' });
    for (const path of ['/v1/topics/no-such-topic/partitions/0/stream', `/v1/topics/${TOPIC}/partitions/7/stream`]) {
      const res = await app.request(path);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(await res.json()).toMatchObject({ code: 'UNKNOWN_TOPIC_OR_PARTITION' });
    }
  });
});
