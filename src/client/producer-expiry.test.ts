// Proves on a fake clock and a fake network what a batch fails with at its delivery timeout: one
// that no attempt can have written fails with the typed reason (no leader, a leader that stopped
// writing because it cannot renew its lease) and `written: false`, so a caller may send it again
// without a duplicate; one that an attempt may have written is REQUEST_TIMED_OUT, indeterminate,
// with its last error beside it.
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock, type ErrorCode } from '../core/index.ts';
import { settle } from '../protocol/test-support.ts';
import { Cluster } from './cluster.ts';
import { Producer } from './producer.ts';
import { scriptedCell, type ScriptedBroker } from './test-support.ts';

const DELIVERY_MS = 5_000;

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A producer on a one-broker scripted cell whose partition 0 is led by `leader` and whose Produce answers `produceError`. */
function setup(o: { leader: number; produceError?: ErrorCode; acks?: 1 | 'all'; retriesMax?: number }) {
  const clock = new FakeClock();
  const broker: ScriptedBroker = { id: 1, ...(o.produceError ? { produceError: o.produceError } : {}) };
  const network = scriptedCell({ brokers: [broker], topic: 't', leaders: [o.leader], highWatermark: 0 });
  const cluster = new Cluster({ brokers: ['b1:1'], socketFactory: network.socketFactory, clock, retry: { retriesMax: 0 } });
  const producer = new Producer(cluster, { acks: o.acks ?? 'all', idempotent: false, lingerMs: 0, deliveryTimeoutMs: DELIVERY_MS, retryBackoffMs: 10, retryBackoffMsMax: 50, retriesMax: o.retriesMax ?? 1_000 });
  closers.push(async () => {
    await producer.close().catch(() => undefined);
    await cluster.close();
  });
  return { clock, producer, broker };
}

/** Sends one record and lets the fake clock run past the delivery timeout; returns the error. */
async function expire(clock: FakeClock, producer: Producer, then?: () => void): Promise<unknown> {
  let error: unknown = null;
  const sent = producer.send('t', { value: 'x' }, { partition: 0 }).catch((e: unknown) => (error = e));
  await settle();
  then?.();
  for (let t = 0; t <= DELIVERY_MS + 100 && error === null; t += 25) {
    clock.advance(25);
    await settle();
  }
  if (error === null) return 'no answer within the delivery timeout';
  await sent;
  return error;
}

describe('a batch at its delivery timeout', () => {
  it('never sent because its partition has no leader: LEADER_NOT_AVAILABLE, written false', async () => {
    const { clock, producer } = setup({ leader: -1 });
    expect(await expire(clock, producer)).toMatchObject({ code: 'LEADER_NOT_AVAILABLE', retriable: true, details: { topic: 't', partition: 0, written: false } });
  });

  it('refused each time by a leader that cannot renew its lease: ARBITER_UNAVAILABLE, written false', async () => {
    const { clock, producer } = setup({ leader: 1, produceError: 'ARBITER_UNAVAILABLE' });
    const err = await expire(clock, producer);
    expect(err).toMatchObject({ code: 'ARBITER_UNAVAILABLE', details: { written: false } });
    expect((err as Error).message).toMatch(/not written within deliveryTimeoutMs 5000/);
  });

  it('out of retries first: the last refusal, written false when every attempt was refused before an append', async () => {
    const { clock, producer } = setup({ leader: 1, produceError: 'LEADER_NOT_AVAILABLE', retriesMax: 3 });
    const err = (await expire(clock, producer)) as Error & { code: string; details: Record<string, unknown> };
    expect(err).toMatchObject({ code: 'LEADER_NOT_AVAILABLE', details: { written: false } });
    expect(err.message).not.toMatch(/deliveryTimeoutMs/);
  });

  it('refused with NOT_LEADER: may have been written (a leader stepping down answers its waiting writes so), no written false', async () => {
    const { clock, producer } = setup({ leader: 1, produceError: 'NOT_LEADER', retriesMax: 3 });
    const err = (await expire(clock, producer)) as { code: string; details: Record<string, unknown> };
    expect(err).toMatchObject({ code: 'NOT_LEADER' });
    expect(err.details['written']).toBeUndefined();
  });

  it('refused with an error that may follow an append (NOT_ENOUGH_REPLICAS): REQUEST_TIMED_OUT, indeterminate', async () => {
    const { clock, producer } = setup({ leader: 1, produceError: 'NOT_ENOUGH_REPLICAS' });
    const err = (await expire(clock, producer)) as { code: string; details: Record<string, unknown> };
    expect(err).toMatchObject({ code: 'REQUEST_TIMED_OUT', details: { lastError: 'NOT_ENOUGH_REPLICAS' } });
    expect(err.details['written']).toBeUndefined();
  });

  it('while the sender waits on a metadata refresh the cell does not answer: still fails at its timeout, not when the refresh ends', async () => {
    const { clock, producer, broker } = setup({ leader: -1 });
    const t0 = clock.monotonicMs();
    // The first metadata came (no leader); every later request to the cell goes unanswered.
    const err = await expire(clock, producer, () => (broker.frozen = true));
    expect(err).toMatchObject({ code: 'LEADER_NOT_AVAILABLE', details: { written: false } });
    // A tenth of the timeout late at most (the watch's period), plus the loop's 25 ms steps.
    expect(clock.monotonicMs() - t0).toBeLessThanOrEqual(DELIVERY_MS * 1.1 + 25);
  });
});
