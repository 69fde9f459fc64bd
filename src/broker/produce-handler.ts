/**
 * Produce: appends each partition's batch and answers per partition. Partitions are independent:
 * one failing (unknown, too large, out of sequence) does not stop the others.
 */
import { EdgeqError, systemClock, type Clock } from '../core/index.ts';
import type { BrokerMetrics } from '../metrics/index.ts';
import { Acks, wireError, type ProducePartitionResult, type ProduceRequest, type ProduceResponse } from '../protocol/index.ts';
import type { TopicManager } from './topic-manager.ts';
import { traceAppend, type AppendTrace } from '../tracing/index.ts';

/** Bounds of produce handling. */
export interface ProduceLimits {
  /** Longest a producer may ask the broker to wait for durability/replication. */
  produceTimeoutMsMax: number;
}

/** Handles one Produce request. */
export async function handleProduce(
  req: ProduceRequest,
  deps: {
    topics: TopicManager;
    limits: ProduceLimits;
    clock?: Clock;
    metrics?: BrokerMetrics;
    /** This broker's region: batches naming it as their origin are refused (ORIGIN_IS_SELF). */
    region?: string;
  },
): Promise<ProduceResponse> {
  const acks = req.acks ?? Acks.UNSPECIFIED;
  if (acks < Acks.UNSPECIFIED || acks > Acks.ALL) throw new EdgeqError('INVALID_REQUEST', `unknown acks value ${String(acks)}`);
  const clock = deps.clock ?? systemClock;
  const started = clock.monotonicMs();
  const metrics = deps.metrics;
  const timeoutMs = Math.min(req.timeoutMs || deps.limits.produceTimeoutMsMax, deps.limits.produceTimeoutMsMax);
  const topics = await Promise.all(
    req.topics.map(async (t) => ({
      name: t.name,
      partitions: await Promise.all(
        t.partitions.map(async (pp): Promise<ProducePartitionResult> => {
          let trace: AppendTrace | null = null;
          const base: ProducePartitionResult = { partition: pp.partition, baseOffset: -1, logAppendTimeMs: -1, logStartOffset: -1, leaderEpoch: -1 };
          try {
            deps.topics.checkTopicId(t.name, t.topicId);
            const p = deps.topics.partition(t.name, pp.partition);
            base.leaderEpoch = p.leaderEpoch;
            const all = acks === Acks.ALL || acks === Acks.UNSPECIFIED;
            trace = traceAppend(t.name, pp.partition, pp.records, { acks: all ? 'all' : 'leader', brokerId: p.brokerId });
            const r = await withTimeout(
              p.produce(pp.records, {
                ...(trace ? { onAppended: trace.appended } : {}),
                leaderEpoch: pp.leaderEpoch ?? null,
                acks: all ? 'all' : 'leader',
                timeoutMs,
                ...(deps.region !== undefined ? { region: deps.region } : {}),
                ...(typeof pp.originCursorExpected === 'number' ? { originCursorExpected: pp.originCursorExpected } : {}),
              }),
              timeoutMs,
              clock,
              t.name,
              pp.partition,
            );
            // A duplicate wrote nothing new: it is not counted again.
            if (metrics && r.duplicate !== true) metrics.recordProduce(r.lastOffset - r.baseOffset + 1, pp.records.byteLength);
            trace?.end({ isrSize: p.isr.length });
            return { ...base, baseOffset: r.baseOffset, logAppendTimeMs: r.appendTimeMs, logStartOffset: p.logStartOffset, duplicate: r.duplicate === true };
          } catch (err) {
            trace?.end({ err });
            return { ...base, error: wireError(err) };
          }
        }),
      ),
    })),
  );
  metrics?.observeProduceLatency(acks === Acks.NONE ? '0' : acks === Acks.LEADER ? '1' : 'all', clock.monotonicMs() - started);
  return { topics };
}

function withTimeout<T>(p: Promise<T>, ms: number, clock: Clock, topic: string, partition: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = clock.setTimeout(() => {
      // The append may still complete; an idempotent retry then answers with its offsets.
      reject(new EdgeqError('REQUEST_TIMED_OUT', `${topic}-${partition}: not durable within ${ms} ms`, { details: { topic, partition } }));
    }, ms);
    p.then(
      (v) => {
        timer.cancel();
        resolve(v);
      },
      (e: unknown) => {
        timer.cancel();
        reject(e);
      },
    );
  });
}
