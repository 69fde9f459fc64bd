// Proves the producer's side of flow control. Against a real broker with a quota: a batch refused
// with QUOTA_EXCEEDED is retried after the broker's throttle and then delivered (once, in order),
// without counting against retriesMax. Against a scripted broker that refuses every produce: the
// adaptive throttle (SRE book, K = 2) lets through exactly the requests its formula
// max(0, (requests − 2·accepts)/(requests + 1)) allows for the draws it was given, a falling
// share, while with the throttle off every request reaches the broker.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.ts';
import { decodeBody, type ProduceRequest } from '../protocol/index.ts';
import { FakeNetwork, settle } from '../protocol/test-support.ts';
import { parseQuota, REJECT_PROBABILITY_MAX } from '../../ratelimit/index.ts';
import { createClient } from './index.ts';
import { apiSpec } from '../protocol/index.ts';
import { Cluster } from './cluster.ts';
import { Producer } from './producer.ts';
import { TestBroker } from './test-support.ts';

let tb: TestBroker;
beforeAll(async () => {
  tb = await TestBroker.start();
});
afterAll(async () => tb?.stop());

describe('producer over a quota (real broker)', () => {
  it('retries a batch refused over the quota after the throttle, and delivers it, retriesMax 0 notwithstanding', async () => {
    const admin = createClient({ brokers: [tb.address], clientId: 'admin' });
    await admin.admin().createTopics([{ name: 'quota-retry', partitions: 1 }]);
    await admin.admin().putQuota(parseQuota('acme', 'quota-retry', { recordsPerSec: 20, bytesPerSec: 1_000_000, burstRecords: 10 }));
    const client = createClient({ brokers: [tb.address], clientId: 'acme' });
    // acks=all, idempotent: the retry must not be written twice.
    const producer = client.producer({ lingerMs: 0, retriesMax: 0, adaptiveThrottle: false });
    const first = await producer.send('quota-retry', Array.from({ length: 10 }, (_, i) => ({ value: `a${i}` })));
    const started = performance.now();
    // 10 more do not fit: refused with a throttle of ~500 ms (10 records at 20/s), retried after it.
    const second = await producer.send('quota-retry', Array.from({ length: 10 }, (_, i) => ({ value: `b${i}` })));
    const tookMs = performance.now() - started;
    expect(tookMs).toBeGreaterThanOrEqual(400);
    expect(first.map((m) => m.offset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(second.map((m) => m.offset)).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    const [hw] = await admin.admin().listOffsets('quota-retry');
    expect(hw!.offset).toBe(20);
    await client.close();
    await admin.close();
  });
});

/** A scripted one-broker cluster whose broker refuses every produce (QUOTA_EXCEEDED, no throttle); counts the produces it read. */
function refusingBroker(): { network: FakeNetwork; produces: () => number } {
  const network = new FakeNetwork();
  let produces = 0;
  network.set('b1:1', {
    brokerId: 1,
    handler: (frame, reply) => {
      const name = apiSpec(frame.apiKey)!.name;
      if (name === 'Metadata') {
        reply({ brokers: [{ id: 1, host: 'b1', port: 1, region: '' }], controllerId: 1, clusterId: 'x', topics: [{ name: 't', internal: false, partitions: [{ partition: 0, leaderId: 1, leaderEpoch: 1, replicas: [1], isr: [1] }] }] });
      } else if (name === 'Produce') {
        produces++;
        const req = decodeBody<ProduceRequest>('ProduceRequest', frame.body);
        const error = { code: 56, message: 'over quota', retriable: true };
        reply({ topics: req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partition: p.partition, error, baseOffset: -1, logAppendTimeMs: -1, logStartOffset: -1, leaderEpoch: 1 })) })), throttleMs: 0 });
      }
    },
  });
  return { network, produces: () => produces };
}

/** Runs a producer against the refusing broker on a fake clock until it decided `requests` requests (bounded in steps). */
async function runAgainstRefusals(adaptive: boolean, random: () => number, requests: number): Promise<{ decided: number; sent: number }> {
  const { network, produces } = refusingBroker();
  const clock = new FakeClock();
  const cluster = new Cluster({ brokers: ['b1:1'], socketFactory: network.socketFactory, clock });
  const producer = new Producer(cluster, {
    acks: 1,
    lingerMs: 0,
    retryBackoffMs: 1,
    retryBackoffMsMax: 1,
    deliveryTimeoutMs: 600_000,
    adaptiveThrottle: adaptive ? { random } : false,
  }, { ownsCluster: true });
  const sending = producer.send('t', { value: 'v' }).catch(() => undefined);
  let decided = 0;
  // Each retry waits at least 1 ms of fake time; 20 steps per request bound the run.
  for (let step = 0; step < requests * 20 && decided < requests; step++) {
    clock.advance(1);
    await settle(5);
    decided = adaptive ? producer.throttleStats.requests : produces();
  }
  await settle();
  const sent = produces();
  // Not producer.close(): its flush would wait for a batch the broker never takes. The send
  // stays pending on a clock nobody advances.
  await cluster.close();
  void sending;
  return { decided, sent };
}

describe('adaptive throttling in the producer (SRE book, K = 2)', () => {
  it('against a broker refusing everything, sends exactly what the formula lets through for its draws: a share falling to the cap\'s floor', async () => {
    const REQUESTS = 300;
    let seed = 0x5eed;
    const draws: number[] = [];
    // A seeded generator; the test replays its draws through the formula.
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const r = seed / 2 ** 31;
      draws.push(r);
      return r;
    };
    const { decided, sent } = await runAgainstRefusals(true, random, REQUESTS);
    expect(decided).toBeGreaterThanOrEqual(REQUESTS);
    // Replay: request i (0-based) finds i requests and no accepts in the window, so it is refused
    // here with probability min(REJECT_PROBABILITY_MAX, i / (i + 1)); it goes out when its draw is
    // at least that.
    let expectedSent = 0;
    const sentAt: number[] = [];
    for (let i = 0; i < decided; i++) {
      if (draws[i]! >= Math.min(REJECT_PROBABILITY_MAX, Math.max(0, (i - 2 * 0) / (i + 1)))) {
        expectedSent++;
        sentAt.push(i);
      }
    }
    expect(sent).toBe(expectedSent);
    // The share sent falls from all of the first request to the floor the cap leaves (1 − 0.8):
    // the client backs off, and is never locked out.
    const late = sentAt.filter((i) => i >= 30).length / (decided - 30);
    expect(sentAt[0]).toBe(0);
    expect(late).toBeGreaterThan(0.1);
    expect(late).toBeLessThan(0.3);
    expect(sent).toBeLessThan(decided * 0.3);
  });

  it('with the throttle off, every request reaches the broker', async () => {
    const { decided, sent } = await runAgainstRefusals(false, Math.random, 50);
    expect(decided).toBeGreaterThanOrEqual(50);
    expect(sent).toBe(decided);
  });
});
