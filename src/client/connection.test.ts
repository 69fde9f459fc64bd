// Proves over real TCP (a frame-speaking fake broker) that a Connection negotiates versions, matches pipelined answers by correlation id, bounds requests in flight, times out, and fails pending requests when the socket drops.
import { afterEach, describe, expect, it } from 'vitest';
import { Connection, decodeBody, parseAddress, type ApiName, type MetadataRequest } from '../protocol/index.ts';
import { FakeServer, type FakeHandler } from './test-support.ts';

let server: FakeServer | null = null;
let conn: Connection | null = null;
afterEach(async () => {
  conn?.close();
  await server?.close();
  server = null;
  conn = null;
});

const topicOf = (body: Buffer) => decodeBody<MetadataRequest>('MetadataRequest', body).topics?.[0] ?? '';
const metadataAnswer = (topic: string) => ({ brokers: [], controllerId: 7, clusterId: 'fake', topics: [{ name: topic, partitions: [], internal: false }] });

async function open(handler: FakeHandler, options: { apis?: ApiName[]; inflightRequestsMax?: number; requestTimeoutMs?: number } = {}) {
  server = await FakeServer.start(handler, options.apis ? { apis: options.apis } : {});
  conn = await Connection.connect({ host: '127.0.0.1', port: server.port }, {
    ...(options.inflightRequestsMax ? { inflightRequestsMax: options.inflightRequestsMax } : {}),
    ...(options.requestTimeoutMs ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
  });
  return conn;
}

describe('Connection', () => {
  it('learns the broker id on connect and refuses APIs the broker lacks', async () => {
    const c = await open((f, reply) => reply(metadataAnswer(topicOf(f.body))), { apis: ['Metadata'] });
    expect(c.brokerId).toBe(7);
    const res = await c.request('Metadata', { topics: ['a'] });
    expect(res.topics[0]!.name).toBe('a');
    await expect(c.request('Produce', { topics: [] })).rejects.toMatchObject({ code: 'UNSUPPORTED_VERSION' });
  });

  it('matches answers sent in reverse order to their requests', async () => {
    const held: (() => void)[] = [];
    const c = await open((f, reply) => {
      held.push(() => reply(metadataAnswer(topicOf(f.body))));
      if (held.length === 3) for (const answer of held.reverse()) answer();
    });
    const results = await Promise.all(['a', 'b', 'c'].map((t) => c.request('Metadata', { topics: [t] })));
    expect(results.map((r) => r.topics[0]!.name)).toEqual(['a', 'b', 'c']);
  });

  it('keeps at most inflightRequestsMax requests on the wire; the rest wait and go in call order', async () => {
    const received: string[] = [];
    let unanswered: (() => void)[] = [];
    let maxSeen = 0;
    const c = await open(
      (f, reply) => {
        received.push(topicOf(f.body));
        unanswered.push(() => reply(metadataAnswer(topicOf(f.body))));
        maxSeen = Math.max(maxSeen, unanswered.length);
      },
      { inflightRequestsMax: 2 },
    );
    const all = Promise.all(['a', 'b', 'c', 'd', 'e'].map((t) => c.request('Metadata', { topics: [t] })));
    // Answer whatever arrived, one round at a time, until all five were answered.
    while (received.length < 5 || unanswered.length > 0) {
      await new Promise((r) => setTimeout(r, 5));
      const now = unanswered;
      unanswered = [];
      now.forEach((answer) => answer());
    }
    const results = await all;
    expect(results.map((r) => r.topics[0]!.name)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(received).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(maxSeen).toBe(2);
  });

  it('fails a request that gets no answer with REQUEST_TIMED_OUT and drops its late answer', async () => {
    let late: (() => void) | null = null;
    const c = await open((f, reply) => {
      const topic = topicOf(f.body);
      if (topic === 'slow') late = () => reply(metadataAnswer('slow'));
      else reply(metadataAnswer(topic));
    });
    await expect(c.request('Metadata', { topics: ['slow'] }, { timeoutMs: 50 })).rejects.toMatchObject({ code: 'REQUEST_TIMED_OUT', retriable: true });
    late!();
    const res = await c.request('Metadata', { topics: ['fast'] });
    expect(res.topics[0]!.name).toBe('fast');
    expect(c.closed).toBe(false);
  });

  it('fails every pending request with CONNECTION_CLOSED when the socket drops', async () => {
    let count = 0;
    const c = await open((_f, _reply, socket) => {
      if (++count === 2) socket.destroy();
    });
    const closed = new Promise((r) => c.onClose(r));
    const results = await Promise.allSettled([c.request('Metadata', { topics: ['a'] }), c.request('Metadata', { topics: ['b'] })]);
    for (const r of results) {
      expect(r.status).toBe('rejected');
      expect((r as PromiseRejectedResult).reason).toMatchObject({ code: 'CONNECTION_CLOSED', retriable: true });
    }
    await closed;
    expect(c.closed).toBe(true);
    await expect(c.request('Metadata', { topics: ['c'] })).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' });
  });

  it('fails to connect to a closed port with a retriable CONNECTION_CLOSED', async () => {
    const fake = await FakeServer.start(() => undefined);
    const port = fake.port;
    await fake.close();
    await expect(Connection.connect({ host: '127.0.0.1', port })).rejects.toMatchObject({ code: 'CONNECTION_CLOSED', retriable: true });
  });

  it('parses host:port addresses', () => {
    expect(parseAddress('127.0.0.1:9092')).toEqual({ host: '127.0.0.1', port: 9092 });
    expect(parseAddress('[::1]:9092')).toEqual({ host: '::1', port: 9092 });
    expect(() => parseAddress('nohost')).toThrow(/host:port/);
  });
});
