// Proves the drain reads every partition of both topics in every region whole, in pages, with origin fields on global topics only; retries a region that does not answer, and names the one that never does.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/core/index.ts';
import type { CheckedTopic } from '../types.ts';
import { drain, DRAIN_REGION_ATTEMPTS } from './drain.ts';
import { FakeGateway } from './fake-gateway.ts';
import type { FetchLike } from './http.ts';

const TOPICS: CheckedTopic[] = [
  { name: 'g', scope: 'global', partitions: 2 },
  { name: 'l', scope: 'local', partitions: 2 },
];

function filled(region: string, records: number): FakeGateway {
  const gw = new FakeGateway(region);
  for (const t of TOPICS) gw.topics.set(t.name, { scope: t.scope, logs: Array.from({ length: t.partitions }, (_, p) => Array.from({ length: records }, (_, i) => ({ value: `${region}/${t.name}/${p}/${i}`, originRegion: region, originOffset: i }))) });
  return gw;
}

function refused(): Promise<Response> {
  return Promise.reject(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }));
}

describe('drain', () => {
  it('reads every partition whole in pages, origins on the global topic only', async () => {
    const a = filled('a', 2_500);
    const b = filled('b', 3);
    a.readPageMax = 1_000;
    const reads: string[] = [];
    const fetch: FetchLike = (url, init) => {
      reads.push(url);
      return Promise.resolve((url.startsWith('http://a.test') ? a : b).app.request(url, init));
    };
    const d = await drain([{ region: 'a', gateway: 'http://a.test/' }, { region: 'b', gateway: 'http://b.test' }], TOPICS, { fetch });
    expect(d.undrained).toEqual([]);
    expect(d.highWatermarks).toEqual({ a: { g: [2_500, 2_500], l: [2_500, 2_500] }, b: { g: [3, 3], l: [3, 3] } });
    const ag1 = d.regions['a']!['g']![1]!;
    expect(ag1.map((r) => r.offset)).toEqual(Array.from({ length: 2_500 }, (_, i) => i));
    expect(ag1[1_234]).toEqual({ offset: 1_234, value: 'a/g/1/1234', originRegion: 'a', originOffset: 1_234 });
    expect(d.regions['b']!['l']![0]).toEqual([0, 1, 2].map((i) => ({ offset: i, value: `b/l/0/${i}` })));
    // 3 pages for each partition of a (1000, 1000, 500), 1 for each of b.
    expect(reads.filter((u) => u.startsWith('http://a.test'))).toHaveLength(12);
    expect(reads.filter((u) => u.startsWith('http://b.test'))).toHaveLength(4);
  });

  it('an empty partition drains to [] with high watermark 0', async () => {
    const a = filled('a', 0);
    const d = await drain([{ region: 'a', gateway: 'http://a.test' }], TOPICS, { fetch: a.fetch });
    expect(d.regions['a']).toEqual({ g: [[], []], l: [[], []] });
    expect(d.highWatermarks['a']).toEqual({ g: [0, 0], l: [0, 0] });
  });

  it('retries a region that does not answer, and names the one that never does', async () => {
    const clock = new FakeClock();
    const a = filled('a', 5);
    const b = filled('b', 5);
    let aFailures = 2;
    const fetch: FetchLike = (url, init) => {
      if (url.startsWith('http://b.test')) return refused();
      if (aFailures > 0) {
        aFailures--;
        return new Promise<Response>(() => {}); // no answer: the request timeout ends it
      }
      return Promise.resolve(a.app.request(url, init));
    };
    const done = drain([{ region: 'a', gateway: 'http://a.test' }, { region: 'b', gateway: 'http://b.test' }], TOPICS, { fetch, clock });
    let result: Awaited<typeof done> | null = null;
    void done.then((r) => (result = r));
    // Bounded: two 10 s timeouts and backoffs for a, four backoffs (1+2+3+4 s) for b.
    for (let i = 0; i < 2_000 && result === null; i++) {
      clock.advance(50);
      for (let j = 0; j < 5; j++) await new Promise((r) => setImmediate(r));
    }
    expect(result).not.toBeNull();
    const d = result!;
    expect(Object.keys(d.regions)).toEqual(['a']);
    expect(d.regions['a']!['g']![0]!.map((r) => r.value)).toEqual([0, 1, 2, 3, 4].map((i) => `a/g/0/${i}`));
    expect(d.undrained).toEqual([{ region: 'b', reason: expect.stringContaining(`${DRAIN_REGION_ATTEMPTS} attempts`) }]);
    expect(d.undrained[0]!.reason).toContain('ECONNREFUSED');
  });
});
