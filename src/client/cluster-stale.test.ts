// Proves that a client that finds no leader (or no partition) in its cached metadata asks the
// cluster again at its next look, rather than trusting that cache until it ages out: metadata
// taken during an election says "no leader", and the campaign's round 197380189 saw two regions'
// exchanges stuck on such a cache for minutes while the origin's cell had long elected a leader.
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.ts';
import { settle } from '../protocol/test-support.ts';
import { Cluster, KNOWN_TOPIC_REFRESH_WAIT_MS } from './cluster.ts';
import { scriptedCell } from './test-support.ts';

/** Leaders by partition that count how often a broker answered Metadata with them (scriptedCell maps them once per answer). */
class CountedLeaders extends Array<number> {
  static override get [Symbol.species]() {
    return Array;
  }
  answers = 0;
  override map<U>(fn: (v: number, i: number, a: number[]) => U): U[] {
    this.answers++;
    return super.map(fn);
  }
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe('a cached "no leader"', () => {
  it('makes the next ensureFresh ask the cluster again', async () => {
    const leaders = CountedLeaders.from([-1, 2]) as CountedLeaders;
    const network = scriptedCell({ brokers: [{ id: 1 }, { id: 2 }], topic: 't', leaders, highWatermark: 0 });
    const cluster = new Cluster({ brokers: ['b1:1'], socketFactory: network.socketFactory, clock: new FakeClock(), retry: { retriesMax: 0 } });
    closers.push(() => cluster.close());
    await cluster.ensureFresh(['t']);
    expect(leaders.answers).toBe(1);
    expect(() => cluster.leaderOf('t', 0)).toThrow(expect.objectContaining({ code: 'LEADER_NOT_AVAILABLE' }));
    // The election ends; nothing else about the cluster changes (no error from a request, the
    // metadata far from its maximum age).
    leaders[0] = 1;
    await cluster.ensureFresh(['t']);
    await settle();
    expect(cluster.leaderOf('t', 0).leaderId).toBe(1);
    // A cache that names the leader is trusted: no request for every look.
    const asked = leaders.answers;
    for (let i = 0; i < 3; i++) {
      await cluster.ensureFresh(['t']);
      expect(cluster.leaderOf('t', 1).leaderId).toBe(2);
    }
    expect(leaders.answers).toBe(asked);
  });

  it('so does a partition the cache does not have', async () => {
    const leaders = [1];
    const network = scriptedCell({ brokers: [{ id: 1 }], topic: 't', leaders, highWatermark: 0 });
    const cluster = new Cluster({ brokers: ['b1:1'], socketFactory: network.socketFactory, clock: new FakeClock(), retry: { retriesMax: 0 } });
    closers.push(() => cluster.close());
    await cluster.ensureFresh(['t']);
    expect(() => cluster.leaderOf('t', 1)).toThrow(expect.objectContaining({ code: 'UNKNOWN_TOPIC_OR_PARTITION' }));
    leaders.push(1);
    await cluster.ensureFresh(['t']);
    expect(cluster.leaderOf('t', 1).leaderId).toBe(1);
  });
});

describe('a known topic while the cell does not answer', () => {
  it('holds a send on a stale cache for KNOWN_TOPIC_REFRESH_WAIT_MS at most; the refresh goes on behind it', async () => {
    const broker = { id: 1, frozen: false };
    const leaders = CountedLeaders.from([1]) as CountedLeaders;
    const network = scriptedCell({ brokers: [broker], topic: 't', leaders, highWatermark: 0 });
    const clock = new FakeClock();
    const cluster = new Cluster({ brokers: ['b1:1'], socketFactory: network.socketFactory, clock, retry: { retriesMax: 0 } });
    closers.push(() => cluster.close());
    await cluster.waitForTopic('t', 3_000);
    // A cell that answers: the refresh comes first.
    cluster.markStale(new Error('a request failed'));
    const asked = leaders.answers;
    await cluster.waitForTopic('t', 3_000);
    expect(leaders.answers).toBe(asked + 1);
    // A cell that does not answer: the send goes on at the bound.
    broker.frozen = true;
    cluster.markStale(new Error('a request failed'));
    let done = false;
    void cluster.waitForTopic('t', 3_000).then(() => (done = true));
    await settle();
    expect(done).toBe(false);
    clock.advance(KNOWN_TOPIC_REFRESH_WAIT_MS);
    await settle();
    expect(done).toBe(true);
    // The refresh did go out (and waits on the frozen broker); it answers once thawed.
    broker.frozen = false;
    expect(cluster.partitionCount('t')).toBe(1);
  });

  it('still waits for a topic it does not know', async () => {
    const broker = { id: 1, frozen: true };
    const network = scriptedCell({ brokers: [broker], topic: 't', leaders: [1], highWatermark: 0 });
    const cluster = new Cluster({ brokers: ['b1:1'], socketFactory: network.socketFactory, clock: new FakeClock(), retry: { retriesMax: 0 } });
    closers.push(() => cluster.close());
    let done = false;
    void cluster.waitForTopic('t', 3_000).then(
      () => (done = true),
      () => (done = true),
    );
    await settle();
    expect(done).toBe(false);
  });
});
