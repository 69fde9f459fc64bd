// Proves on a fake clock and a fake network that a frozen broker (it accepts connections and answers nothing, as a SIGSTOPped process does) costs a client bounded time: a metadata lookup hedges to the next broker after metadataHedgeDelayMs and remembers the frozen one as slow, a lookup with every broker frozen fails retriably after one attempt bound per broker, a frozen leader neither holds a batch past its deliveryTimeoutMs nor delays batches for live leaders, and a poll returns at its own timeout.
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.ts';
import { settle } from '../protocol/test-support.ts';
import { Cluster, CLUSTER_DEFAULTS } from './cluster.ts';
import { Consumer } from './consumer.ts';
import { Producer } from './producer.ts';
import { scriptedCell, type ScriptedBroker } from './test-support.ts';

const HEDGE_MS = CLUSTER_DEFAULTS.metadataHedgeDelayMs;
const ATTEMPT_MS = CLUSTER_DEFAULTS.metadataAttemptTimeoutMs;

/** Tracks a promise's outcome without awaiting it, so a test can check it is still pending. */
function track<T>(p: Promise<T>): { state: () => 'pending' | 'resolved' | 'rejected'; value: () => T | undefined; error: () => unknown } {
  let state: 'pending' | 'resolved' | 'rejected' = 'pending';
  let value: T | undefined;
  let error: unknown = null;
  p.then(
    (v) => {
      state = 'resolved';
      value = v;
    },
    (e: unknown) => {
      state = 'rejected';
      error = e;
    },
  );
  return { state: () => state, value: () => value, error: () => error };
}

/** Advances the fake clock by `ms` and lets the fake sockets deliver what that released. */
async function advance(clock: FakeClock, ms: number): Promise<void> {
  clock.advance(ms);
  await settle();
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function setup(brokers: ScriptedBroker[], leaders: number[], bootstrap: number[]) {
  const clock = new FakeClock();
  const network = scriptedCell({ brokers, topic: 't', leaders, highWatermark: 2 });
  const cluster = new Cluster({ brokers: bootstrap.map((id) => `b${id}:${id}`), socketFactory: network.socketFactory, clock, retry: { retriesMax: 0 } });
  closers.push(() => cluster.close());
  return { clock, network, cluster };
}

describe('a frozen broker', () => {
  it('ahead in the bootstrap list: metadata comes from the next broker after one hedge delay, and the frozen one is asked last afterwards', async () => {
    const { clock, network, cluster } = setup([{ id: 1, frozen: true }, { id: 2 }, { id: 3 }], [2], [1, 2, 3]);
    const refresh = track(cluster.refreshMetadata());
    await settle();
    await advance(clock, HEDGE_MS - 1);
    expect(refresh.state()).toBe('pending');
    await advance(clock, 1);
    expect(refresh.state()).toBe('resolved');
    expect(cluster.leaderOf('t', 0).leaderId).toBe(2);
    // The hedge went no further than the broker that answered.
    expect(network.opened.get('b3:3') ?? 0).toBe(0);
    // Its attempt runs out: remembered as slow, so the next lookup asks broker 2 first and
    // needs no hedge delay at all.
    await advance(clock, ATTEMPT_MS);
    cluster.markStale();
    const again = track(cluster.refreshMetadata());
    await settle();
    expect(again.state()).toBe('resolved');
    expect(network.opened.get('b1:1')).toBe(1);
  });

  it('every broker frozen: the lookup fails with a retriable BROKER_NOT_AVAILABLE once the last hedged attempt runs out', async () => {
    const { clock, cluster } = setup([{ id: 1, frozen: true }, { id: 2, frozen: true }, { id: 3, frozen: true }], [1], [1, 2, 3]);
    const refresh = track(cluster.refreshMetadata());
    await settle();
    // Broker 3 is asked at 2 hedge delays and gives up one attempt bound later.
    const lastGivesUpMs = 2 * HEDGE_MS + ATTEMPT_MS;
    await advance(clock, lastGivesUpMs - 1);
    expect(refresh.state()).toBe('pending');
    await advance(clock, 1);
    expect(refresh.state()).toBe('rejected');
    expect(refresh.error()).toMatchObject({ code: 'BROKER_NOT_AVAILABLE', retriable: true });
  });

  it('a frozen leader: connectionTo with a timeout gives up at it', async () => {
    const { clock, cluster } = setup([{ id: 1, frozen: true }, { id: 2 }], [1], [2]);
    await cluster.refreshMetadata();
    const connecting = track(cluster.connectionTo(1, { timeoutMs: 700 }));
    await settle();
    await advance(clock, 699);
    expect(connecting.state()).toBe('pending');
    await advance(clock, 1);
    expect(connecting.error()).toMatchObject({ code: 'REQUEST_TIMED_OUT', retriable: true });
  });

  it('a frozen leader holds a batch no longer than its deliveryTimeoutMs, and batches for a live leader do not wait behind it', async () => {
    const b1: ScriptedBroker = { id: 1 };
    const { clock, cluster } = setup([b1, { id: 2 }], [1, 2], [2]);
    const deliveryTimeoutMs = 5_000;
    const producer = new Producer(cluster, { acks: 1, lingerMs: 0, deliveryTimeoutMs, requestTimeoutMs: 30_000, retryBackoffMs: 10, retryBackoffMsMax: 10 });
    closers.push(() => producer.close().catch(() => undefined));
    // Connected to both leaders while they answer.
    const warm = track(Promise.all([producer.send('t', { value: 'w0' }, { partition: 0 }), producer.send('t', { value: 'w1' }, { partition: 1 })]));
    await settle();
    expect(warm.state()).toBe('resolved');

    // Broker 1 freezes with its connection open: a request in flight gets no answer.
    b1.frozen = true;
    const toFrozen = track(producer.send('t', { value: 'f' }, { partition: 0 }));
    const toLive = track(producer.send('t', { value: 'l' }, { partition: 1 }));
    await settle();
    expect(toLive.state()).toBe('resolved');
    await advance(clock, deliveryTimeoutMs - 1);
    expect(toFrozen.state()).toBe('pending');
    await advance(clock, 1);
    expect(toFrozen.error()).toMatchObject({ code: 'REQUEST_TIMED_OUT', retriable: true });
  });

  it('a frozen leader whose handshake never ends does not delay a batch for a live leader sent with it', async () => {
    const { clock, cluster } = setup([{ id: 1, frozen: true }, { id: 2 }], [1, 2], [2]);
    const producer = new Producer(cluster, { acks: 1, lingerMs: 0, deliveryTimeoutMs: 5_000 });
    closers.push(() => producer.close().catch(() => undefined));
    const toFrozen = track(producer.send('t', { value: 'f' }, { partition: 0 }));
    const toLive = track(producer.send('t', { value: 'l' }, { partition: 1 }));
    await settle();
    expect(toLive.state()).toBe('resolved');
    expect(toFrozen.state()).toBe('pending');
    await advance(clock, 5_000);
    expect(toFrozen.error()).toMatchObject({ code: 'REQUEST_TIMED_OUT' });
  });

  it('the only bootstrap broker frozen: a poll returns nothing at its own timeout instead of waiting for the connect', async () => {
    const { clock, cluster } = setup([{ id: 1, frozen: true }], [1], [1]);
    const consumer = new Consumer(cluster, { maxWaitMs: 100 });
    closers.push(() => consumer.close());
    consumer.assign([{ topic: 't', partition: 0 }]);
    consumer.seek('t', 0, 0);
    const polled = track(consumer.poll({ timeoutMs: 1_000 }));
    await settle();
    await advance(clock, 999);
    expect(polled.state()).toBe('pending');
    await advance(clock, 1);
    expect(polled.state()).toBe('resolved');
    expect(polled.value()).toEqual([]);
  });
});
