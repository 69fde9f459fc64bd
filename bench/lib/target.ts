/**
 * A system under test in the produce benchmarks (edgeq or JetStream), and the edgeq side of it:
 * one batching producer for throughput and one unlingered producer for latency over a client, on
 * a topic the bench prepares its own way (a lone broker's flush policy, a cell's replicated topic).
 */
import { AckPolicy, type JetStreamClient, type JetStreamManager } from 'nats';
import { createClient, type Admin, type EdgeqClient } from '../../src/client/index.ts';
import { consumeEdgeq } from './harness.ts';

/** A system under test: how to produce one message of a size, for throughput and latency. */
export interface Target {
  system: 'edgeq' | 'nats';
  mode: string;
  /** Prepares the topic/stream for `size` and returns its senders and reader. */
  prepare(size: number): Promise<{
    send: () => Promise<unknown>;
    /** A sender tuned for latency (edgeq: no linger). */
    sendOne: () => Promise<unknown>;
    consume: (count: number) => Promise<number>;
  }>;
  close(): Promise<void>;
}

/** How an edgeq target connects and makes its topic for a message size. */
export interface EdgeqTargetOptions {
  brokers: string[];
  clientId: string;
  mode: string;
  /** Creates (or picks) the topic for `size`-byte messages and returns its name. */
  topicFor: (size: number, client: EdgeqClient, admin: Admin) => Promise<string>;
  /** Bound on reading back what was produced. */
  consumeSecondsMax: number;
}

/** The edgeq side of a produce benchmark. */
export function edgeqTarget(o: EdgeqTargetOptions): Target {
  const client = createClient({ brokers: o.brokers, clientId: o.clientId });
  const admin = client.admin();
  // Throughput: the producer batches (5 ms linger, large batches). Latency: no linger, so each
  // message goes out at once, as JetStream's publish does.
  const producer = client.producer({ acks: 'all', lingerMs: 5, batchBytesMax: 256 * 1024, bufferBytesMax: 256 * 1024 * 1024 });
  const quick = client.producer({ acks: 'all', lingerMs: 0 });
  return {
    system: 'edgeq',
    mode: o.mode,
    async prepare(size) {
      const topic = await o.topicFor(size, client, admin);
      const value = Buffer.alloc(size, 0x61);
      return {
        send: () => producer.send(topic, { value }),
        sendOne: () => quick.send(topic, { value }),
        consume: (count) => consumeEdgeq(client, topic, count, o.consumeSecondsMax),
      };
    },
    close: () => client.close(),
  };
}

/**
 * Reads up to `count` messages of `stream` back through a fresh unacknowledged durable consumer;
 * answers messages per second. Bounded by `secondsMax`, even if the pull stalls.
 */
export async function consumeJetStream(js: JetStreamClient, jsm: JetStreamManager, stream: string, count: number, secondsMax: number): Promise<number> {
  await jsm.consumers.add(stream, { durable_name: 'bench', ack_policy: AckPolicy.None });
  const consumer = await js.consumers.get(stream, 'bench');
  const c0 = performance.now();
  let got = 0;
  const messages = await consumer.consume({ max_messages: 10_000 });
  // A stall must not hang the phase: stop the pull at the deadline.
  const guard = setTimeout(() => messages.stop(), secondsMax * 1000);
  for await (const _m of messages) {
    got++;
    if (got >= count || performance.now() - c0 > secondsMax * 1000) break;
  }
  clearTimeout(guard);
  const rate = got / ((performance.now() - c0) / 1000);
  // stop() ends the pull; close() would wait for a drain that never comes without acks.
  messages.stop();
  return rate;
}
